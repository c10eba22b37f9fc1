package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

const modulePath = "github.com/sluicehq/sluice"

// sourceRoot finds the root of a Sluice source tree: the directory holding
// the go.mod of this module, from the working directory upwards.
func sourceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isSluiceModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the example plugins are built from source: run this command inside a clone of the Sluice repository (no go.mod of " + modulePath + " was found in the working directory or above it)")
		}
		dir = parent
	}
}

func isSluiceModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == modulePath
		}
	}
	return false
}

// buildExamples compiles the named example plugins (directories under
// plugins/, internal/slowcount included) into outDir, each named by its
// last element, and returns the module paths by name.
func buildExamples(ctx context.Context, outDir string, names ...string) (map[string]string, error) {
	root, err := sourceRoot()
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, n := range names {
		out := filepath.Join(outDir, filepath.Base(n)+".wasm")
		if err := wasmbuild.Go(ctx, filepath.Join(root, "plugins", n), out); err != nil {
			return nil, fmt.Errorf("building the example plugin %s: %w", n, err)
		}
		paths[n] = out
	}
	return paths, nil
}

// readExamples reads the modules buildExamples built (paths, by name) into
// the byte slices of dsts, by name; a name not built is left alone.
func readExamples(paths map[string]string, dsts map[string]*[]byte) error {
	for name, dst := range dsts {
		p, ok := paths[name]
		if !ok {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		*dst = b
	}
	return nil
}
