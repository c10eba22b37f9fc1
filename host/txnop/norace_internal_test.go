//go:build !race

package txnop

const raceDetector = false
