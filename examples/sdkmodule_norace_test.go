//go:build !race

package examples

var raceFlags []string
