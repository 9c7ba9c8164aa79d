//go:build !race

package routes

// raceEnabled tells the memory test that the race detector is on: it runs ten times slower and keeps more.
const raceEnabled = false
