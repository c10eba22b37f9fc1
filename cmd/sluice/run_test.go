package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestStoppedWhileStarting: a start cut short by a stop request is a
// clean exit that says so; any other failure, or a cancellation nobody
// asked for, stays an error.
func TestStoppedWhileStarting(t *testing.T) {
	stopped, stop := context.WithCancel(context.Background())
	stop()
	cut := fmt.Errorf("operator %q: calling _initialize failed: %w", "count", context.Canceled)
	var w strings.Builder
	if err := stoppedWhileStarting(stopped, &w, cut); err != nil || !strings.Contains(w.String(), "stopped while the pipeline was starting") {
		t.Errorf("stopped while starting: %v, said %q; want nil and a line saying so", err, w.String())
	}
	other := errors.New("plugin not found")
	if err := stoppedWhileStarting(stopped, io.Discard, other); err != other {
		t.Errorf("another failure after a stop request: %v, want it returned", err)
	}
	if err := stoppedWhileStarting(context.Background(), io.Discard, cut); err != cut {
		t.Errorf("a cancellation without a stop request: %v, want it returned", err)
	}
}
