package state

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"
)

// childEnv selects a helper mode when the test binary re-executes itself
// (see crash_test.go): the crash tests need a second process to kill, and a
// second process to hold the directory lock.
const childEnv = "SLUICE_STATE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode, os.Getenv("SLUICE_STATE_TEST_DIR")))
	}
	goleak.VerifyTestMain(m)
}

func quietOptions(groups int) Options {
	return Options{KeyGroups: groups, Logger: slog.New(slog.DiscardHandler)}
}

// runChild runs a helper process mode and returns its exit status.
func runChild(mode, dir string) int {
	switch mode {
	case "commit-loop":
		// Commit forever: commit i sets every key of two tables to i, sets
		// or deletes key "flip" by parity, and records position i. After
		// each Commit returns, print i. The parent kills us at some point.
		s, err := Open(dir, quietOptions(8))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		a, b := s.Table("a"), s.Table("b")
		se := s.NewSession()
		out := bufio.NewWriter(os.Stdout)
		for i := s.Positions()["src"] + 1; ; i++ {
			v := []byte(strconv.FormatUint(i, 10))
			for k := range crashKeys {
				key := []byte(fmt.Sprintf("k%03d", k))
				_ = se.Put(a, key, v)
				_ = se.Put(b, key, v)
			}
			if i%2 == 0 {
				_ = se.Put(a, []byte("flip"), v)
			} else {
				_ = se.Delete(a, []byte("flip"))
			}
			if err := s.Commit(map[string]uint64{"src": i}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			se.Reset()
			fmt.Fprintln(out, i)
			_ = out.Flush()
		}
	case "hold-lock":
		// Open the directory, say so, and hold it until stdin closes.
		s, err := Open(dir, quietOptions(8))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		return 0
	}
	if code, ok := diskChild(mode, dir); ok {
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", mode)
	return 2
}

// crashKeys is the number of keys per table the commit-loop child writes.
const crashKeys = 200
