package runtime

import (
	"os/exec"
	goruntime "runtime"
	"syscall"
)

// startNiced starts cmd at niceness nice. Linux keeps a niceness per
// thread, and a new process takes its parent thread's: the command is
// started from a thread made nicer for it, locked to a goroutine that
// ends without unlocking it, so that the Go runtime ends the thread
// instead of running other goroutines on it at the lower priority. A
// thread that cannot be made nicer (the process already runs nicer than
// nice) starts cmd at its own priority.
func startNiced(cmd *exec.Cmd, nice int) error {
	if nice <= 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		// Not unlocked: the thread ends with this goroutine.
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), min(nice, LowestNice))
		errc <- cmd.Start()
	}()
	return <-errc
}
