//go:build race

package storage

// raceEnabled tells tests that count allocations that the race detector is on (sync.Pool drops items under it).
const raceEnabled = true
