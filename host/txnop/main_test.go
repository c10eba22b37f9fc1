package txnop_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// env holds what TestMain prepares: the test guest's bytes and a directory
// for wazero's compilation cache, so that each engine compiles the guest
// in milliseconds.
var env struct {
	ledger   []byte
	stamp    []byte
	cacheDir string
}

func TestMain(m *testing.M) {
	flag.Parse()
	if raceEnabled && !flagSet("rapid.checks") {
		// The property tests run every strategy on three worker counts
		// per check; the race detector slows that down tenfold.
		_ = flag.Set("rapid.checks", "20")
	}
	os.Exit(run(m))
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-txnop-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.cacheDir = filepath.Join(dir, "cache")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	mods, err := wasmbuild.GoModules(ctx, map[string]string{
		"ledger": filepath.Join("testdata", "ledger"),
		// host/plugin's guest of the deterministic environment.
		"stamp": filepath.Join("..", "plugin", "testdata", "determinism", "txnop"),
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.ledger, env.stamp = mods["ledger"], mods["stamp"]
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// loadLedger loads the test guest as a transactional plugin on an engine
// of its own with the given call timeout (0: the engine's default; negative:
// none), both closed when tb ends.
func loadLedger(tb testing.TB, timeout time.Duration) *plugin.Plugin {
	tb.Helper()
	return loadGuest(tb, "ledger", env.ledger, timeout)
}

// loadGuest loads a transactional test guest as loadLedger does.
func loadGuest(tb testing.TB, name string, code []byte, timeout time.Duration) *plugin.Plugin {
	tb.Helper()
	ctx := context.Background()
	cfg := runtime.NewConfig().WithHostModules(plugin.HostModule()).WithCacheDir(env.cacheDir).WithCallTimeout(2 * time.Minute)
	switch {
	case timeout > 0:
		cfg = cfg.WithCallTimeout(timeout)
	case timeout < 0:
		cfg = cfg.WithCallTimeout(0)
	}
	eng, err := runtime.NewWazero(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	// The guest's error logs are the reasons the tests read from errors.
	p, err := plugin.Load(ctx, eng, name+".wasm", code, plugin.KindTransactional, plugin.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		_ = eng.Close(ctx)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Close(ctx); err != nil {
			tb.Error(err)
		}
		if err := eng.Close(ctx); err != nil {
			tb.Error(err)
		}
	})
	return p
}
