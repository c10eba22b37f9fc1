//go:build !linux

package bench

// maxRSS returns 0: the peak resident memory is read on Linux only.
func maxRSS() int64 { return 0 }
