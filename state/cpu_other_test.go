//go:build !unix

package state

import "time"

// cpuTime is 0 where getrusage is not available.
func cpuTime() time.Duration { return 0 }
