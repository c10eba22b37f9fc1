//go:build race

package natsconn_test

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
