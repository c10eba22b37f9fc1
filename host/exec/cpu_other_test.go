//go:build !unix

package exec

import "time"

// processCPU returns 0: the CPU time is not read on this system.
func processCPU() time.Duration { return 0 }
