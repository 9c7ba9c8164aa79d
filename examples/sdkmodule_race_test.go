//go:build race

package examples

// raceFlags passes the race detector on to the nested modules' tests when this test binary has it (CI runs
// go test -race).
var raceFlags = []string{"-race"}
