//go:build race

package sluice

// raceBuild is 1 in race builds, whose pointer checks refuse the reads past
// a byte string's end of the declaration encoder's moves (txncodec.go).
const raceBuild = 1
