//go:build race

package txnop

// raceDetector reports whether the internal tests run under the race
// detector, which changes allocation counts.
const raceDetector = true
