// Package examples holds example plugins built with sdk-guest, example configs and an example bootstrap file
// (bootstrap.json, checked by a test). Each example plugin gets its own directory with main.go, README.md and a
// test that runs it.
package examples
