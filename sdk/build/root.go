package build

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ModulePath is the Go module path of the Sluice checkout.
const ModulePath = "github.com/sluicehq/sluice"

// The Go modules nested in a Sluice checkout, which a Go plugin requires
// instead of the host's module: the Go SDK, and the guest-host contract it
// requires. Their directories are slash-separated and relative to the
// checkout.
const (
	SDKModulePath = ModulePath + "/sdk/go"
	SDKModuleDir  = "sdk/go"
	ABIModulePath = ModulePath + "/abi"
	ABIModuleDir  = "abi"
)

// SDKFile is the name of the file, in a plugin directory, that names the
// Sluice checkout whose SDK the plugin uses: one line, a directory, absolute
// or relative to the plugin directory. `sluice plugin new` writes it.
const SDKFile = ".sluice-sdk"

// ErrNoRoot is returned when no Sluice checkout can be found.
var ErrNoRoot = errors.New("build: no Sluice checkout found")

// FindRoot returns the nearest directory at or above dir whose go.mod
// declares module github.com/sluicehq/sluice: the Sluice checkout dir is
// in. It fails with ErrNoRoot when there is none.
func FindRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isCheckout(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%w at or above %s (looked for a go.mod declaring module %s)", ErrNoRoot, abs, ModulePath)
		}
	}
}

// CheckRoot returns nil when dir is a Sluice checkout, and an error wrapping
// ErrNoRoot that says why not otherwise.
func CheckRoot(dir string) error {
	if !isCheckout(dir) {
		return fmt.Errorf("%w: %s has no go.mod declaring module %s", ErrNoRoot, dir, ModulePath)
	}
	return nil
}

// isCheckout reports whether dir/go.mod declares the Sluice module.
func isCheckout(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`) == ModulePath
		}
	}
	return false
}

// Root returns the Sluice checkout a build of the plugin in dir uses:
// explicit when it is not empty; else the directory dir/.sluice-sdk names;
// else FindRoot of dir; else FindRoot of the working directory. The result
// is absolute. It fails, wrapping ErrNoRoot, when the directory it settles
// on is not a checkout, or none is found.
func Root(dir, explicit string) (string, error) {
	if explicit != "" {
		abs, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("build: %w", err)
		}
		return abs, CheckRoot(abs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, SDKFile)); err == nil {
		p := strings.TrimSpace(string(b))
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("build: %w", err)
		}
		if err := CheckRoot(abs); err != nil {
			return "", fmt.Errorf("%s names %s: %w", filepath.Join(dir, SDKFile), p, err)
		}
		return abs, nil
	}
	if r, err := FindRoot(dir); err == nil {
		return r, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	if r, err := FindRoot(wd); err == nil {
		return r, nil
	}
	return "", fmt.Errorf("%w above %s or the working directory %s: name it (--sdk), or write its path in %s",
		ErrNoRoot, dir, wd, filepath.Join(dir, SDKFile))
}
