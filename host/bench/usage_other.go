//go:build !linux

package bench

import "time"

// maxRSS returns 0: the peak resident memory is read on Linux only.
func maxRSS() int64 { return 0 }

// processCPU returns 0: the process's CPU time is read on Linux only.
func processCPU() time.Duration { return 0 }
