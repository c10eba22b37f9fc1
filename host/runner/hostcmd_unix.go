//go:build unix

package runner

import (
	osexec "os/exec"
	"syscall"
)

// ownGroup runs cmd in a process group of its own and makes its
// cancellation kill the whole group, so that a shell command's children
// (a kubectl the shell started) end with it.
func ownGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
