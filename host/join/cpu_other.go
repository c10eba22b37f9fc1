//go:build !unix

package join

import "time"

// processCPU returns 0 where the process's CPU time is not measured.
func processCPU() time.Duration { return 0 }
