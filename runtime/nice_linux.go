package runtime

import (
	"os/exec"
	"syscall"
)

// startNiced starts cmd in a process group of its own and sets the
// niceness of every thread in the group to nice. Linux keeps a niceness
// per thread, and a thread takes its creator's: the child's threads made
// after the call are as nice. The child runs at its parent's priority
// from its start until the call, so a child that must not run before it
// waits for input its parent sends once startNiced has returned (as
// ServeCompile does), and lowers its own group again (lowerOwnPriority)
// for the threads it made meanwhile. A niceness the parent may not set
// (lower than its own) leaves the child at the parent's.
//
// Forking from a thread made nicer for the purpose would be simpler and
// is wrong: the fork holds the thread's P until the child has called
// exec, and a starved low-priority child then keeps one of the pipeline's
// Ps idle for as long as it waits for a CPU.
func startNiced(cmd *exec.Cmd, nice int) error {
	if nice <= 0 {
		return cmd.Start()
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, min(nice, LowestNice))
	return nil
}

// lowerOwnPriority sets the niceness of every thread of this process to
// nice, when the process leads its own process group (startNiced made
// it), so as not to renice a shell's job; other threads made later take
// it from their creators.
func lowerOwnPriority(nice int) {
	if nice <= 0 || syscall.Getpgrp() != syscall.Getpid() {
		return
	}
	_ = syscall.Setpriority(syscall.PRIO_PGRP, 0, min(nice, LowestNice))
}
