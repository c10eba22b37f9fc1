//go:build !race

package txnop_test

const raceEnabled = false
