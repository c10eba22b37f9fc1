//go:build !linux

package runtime

import "os/exec"

// startNiced starts cmd; outside Linux at the parent's priority.
func startNiced(cmd *exec.Cmd, _ int) error { return cmd.Start() }

// lowerOwnPriority does nothing outside Linux.
func lowerOwnPriority(int) {}
