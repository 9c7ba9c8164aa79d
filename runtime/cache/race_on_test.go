//go:build race

package cache

// raceEnabled shrinks the slowest tests: the race detector makes vector arithmetic about ten times slower.
const raceEnabled = true
