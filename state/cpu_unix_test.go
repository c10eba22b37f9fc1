//go:build unix

package state

import (
	"syscall"
	"time"
)

// cpuTime returns the process's CPU time, user and system, so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
