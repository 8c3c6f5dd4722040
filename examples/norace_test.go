//go:build !race

package examples

// raceEnabled reports whether the tests were built with the race detector.
const raceEnabled = false
