//go:build !wasmtime

package runtime

import (
	"context"
	"sync"
	"testing"
)

// TestWatchRaceWithWatchdog: calls armed and disarmed as fast as a worker
// makes them, with the watchdog judging every call overdue all along,
// never leave the flag up for the next call unreported: a disarm either
// reports the flag raised during its call (and lowers it), or finds it
// down.
func TestWatchRaceWithWatchdog(t *testing.T) {
	e := newEngine(t, baseConfig()).(*wazeroEngine)
	w := instantiate(t, compile(t, e, "raw", rawModule())).(*wazeroInstance).watch
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				w.check(1 << 40) // every call is past its deadline
			}
		}
	}()
	ctx := context.Background()
	raised := 0
	for range 20000 {
		w.arm(ctx, 1)
		if w.disarm() {
			raised++
		}
		if v := w.flag.Get(); v != 0 {
			close(stop)
			wg.Wait()
			t.Fatalf("flag %d after a disarm", v)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d of 20000 calls raised", raised)
}
