// Command gateway runs the model gateway: it reads its settings from flags and the environment, opens the store
// in the data folder, applies the bootstrap file, creates the first admin key on a first start, serves HTTP, and
// on SIGINT or SIGTERM stops accepting, lets requests in flight finish within the grace period and closes the
// store cleanly. Run `gateway -h` for the flags.
package main
