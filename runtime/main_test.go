package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// guestNames are the Go test guests under testdata/guests.
var guestNames = []string{"basic", "hostcall"}

// guests holds each compiled test guest by name. TestMain fills it before
// any test runs; tests only read it.
var guests map[string][]byte

// testCacheDir is a compilation cache shared by the engines of the tests
// (see baseConfig): the Go guests weigh 2 MB each, and compiling them once
// per test would make the suite take minutes under -race.
var testCacheDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	built, err := buildGuests(context.Background(), guestNames)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building test guests:", err)
		return 1
	}
	guests = built
	testCacheDir, err = os.MkdirTemp("", "sluice-runtime-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(testCacheDir)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// baseConfig is NewConfig with the shared compilation cache.
func baseConfig() Config { return NewConfig().WithCacheDir(testCacheDir) }

// buildGuests compiles the guests, at most two at a time (the machine's
// cores are shared), and returns their bytes.
func buildGuests(ctx context.Context, names []string) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "sluice-runtime-guests-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	sem := make(chan struct{}, 2)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = wasmbuild.Go(ctx, filepath.Join("testdata", "guests", name), filepath.Join(dir, name+".wasm"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}
