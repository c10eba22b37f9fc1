//go:build !linux

package runtime

import "os/exec"

// startNiced starts cmd; outside Linux at the parent's priority (a
// process's niceness there is the whole process's, which the parent keeps).
func startNiced(cmd *exec.Cmd, _ int) error { return cmd.Start() }
