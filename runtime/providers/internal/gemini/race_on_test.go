//go:build race

package gemini

// raceEnabled: the race detector makes sync.Pool drop items at random, so allocation counts vary a little.
const raceEnabled = true
