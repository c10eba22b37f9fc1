package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// guestNames are the Go test guests under testdata/guests.
var guestNames = []string{"basic", "hostcall", "sandbox"}

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
	if os.Getenv(ChildCompileEnv) != "" {
		// A compile that a test's ProcessCompiler started in this binary.
		if err := ServeCompile(context.Background(), os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
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

// buildGuests compiles the guests under testdata/guests and returns their bytes.
func buildGuests(ctx context.Context, names []string) (map[string][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	dirs := make(map[string]string, len(names))
	for _, name := range names {
		dirs[name] = filepath.Join("testdata", "guests", name)
	}
	return wasmbuild.GoModules(ctx, dirs)
}
