// Command sluice runs stream-processing pipelines whose operators are
// WebAssembly plugins, fed by NATS.
//
//	sluice demo                       a live word count on an embedded NATS server
//	sluice run -c pipeline.yaml       run a pipeline
//	sluice lint -c pipeline.yaml      check a pipeline and its plugins without running it
//	sluice plugin new --lang L NAME   scaffold a plugin project (go, rust, c, assemblyscript, wat)
//	sluice plugin build DIR           compile a plugin in any SDK language to Wasm
//	sluice plugin test DIR            build a plugin and run its test cases through the host
//	sluice plugin check FILE.wasm     inspect a module and report its problems
//	sluice plugin list                the plugin registry of a data directory
//	sluice plugin swap --operator OP FILE.wasm   replace an operator's plugin while it runs
//	sluice plugin rollback --operator OP         return to the plugin that ran before
//	sluice workers --operator OP N    change a running operator's number of workers
//	sluice state dump -c pipeline.yaml  print committed state as JSON Lines (running or stopped)
//	sluice doctor -c pipeline.yaml    the control plane's findings, workers' health and decisions
//	sluice bench                      measure the user-level figures
//	sluice bench txn --app sl         run a transactional workload under every strategy
//	sluice version                    print the version (or sluice --version)
//
// Run `sluice help COMMAND` for the flags of each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	wasm "github.com/sluicehq/sluice/runtime"
)

func main() {
	if os.Getenv(wasm.ChildCompileEnv) != "" {
		// A child that a running sluice started to compile a plugin.
		os.Exit(serveCompileChild())
	}
	os.Exit(run(os.Args[1:]))
}

// Exit statuses besides 0 (success) and 128 plus a signal's number (a
// second SIGINT or SIGTERM).
const (
	exitFailure = 1
	exitUsage   = 2
	// exitDeadLetters: a run processed and committed everything, but
	// dead-lettered records, with --fail-on-dead-letters or
	// dead_letter.fail_run.
	exitDeadLetters = 3
)

// run executes the command line and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error, 3 for a run that dead-lettered
// records when asked to fail for that.
func run(args []string) int {
	ctx, stop := signalContext()
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "sluice:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var de *deadLettersError
	if errors.As(err, &de) {
		return exitDeadLetters
	}
	return exitFailure
}

// signalContext is cancelled by the first SIGINT or SIGTERM, which asks the
// running command to drain and commit; a second signal exits at once, with
// status 128 plus the signal's number, whatever the command is waiting for.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	watching, unwatch := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		if code := watchSignals(watching, ch, cancel, os.Stderr); code != 0 {
			os.Exit(code)
		}
	}()
	return ctx, func() { signal.Stop(ch); unwatch(); cancel() }
}

// watchSignals calls cancel at the first signal from ch and returns the
// exit status for the second, saying each on w; it returns 0 once watching
// is done. The second signal is awaited on watching alone: the command's
// context is cancelled by then, and a command stuck on a sink that does
// not answer is what the second signal is for.
func watchSignals(watching context.Context, ch <-chan os.Signal, cancel func(), w io.Writer) int {
	select {
	case <-ch:
		fmt.Fprintln(w, "sluice: stopping: draining and committing what was read (signal again to exit at once)")
		cancel()
	case <-watching.Done():
		return 0
	}
	select {
	case sig := <-ch:
		fmt.Fprintf(w, "sluice: %v again: exiting at once, without draining\n", sig)
		if s, ok := sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 1
	case <-watching.Done():
		return 0
	}
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "sluice",
		Short:         "Stream processing with WebAssembly operators, fed by NATS",
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(versionLine())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	root.AddCommand(newVersionCmd(), newRunCmd(), newDemoCmd(), newPluginCmd(), newStateCmd(), newBenchCmd())
	root.AddCommand(newLintCmd(), newWorkersCmd(), newClusterCmd(), newDoctorCmd())
	return root
}
