package sluice_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modulePath is the host's module; the abi and the Go SDK are modules of
// their own, nested in the repository.
const modulePath = "github.com/sluicehq/sluice"

// layer names the part of the repository a package belongs to, by its
// import path relative to the repository root: its first element, but
// sdk/go (the Go SDK), the host's test harness (host/plugin/hosttest) and
// the SDK tools of the binary (sdk/build, sdk/scaffold) apart.
func layer(rel string) string {
	switch {
	case rel == "host/plugin/hosttest" || strings.HasPrefix(rel, "host/plugin/hosttest/"):
		return "host/plugin/hosttest"
	case rel == "plugins/internal/plugintest":
		return "plugins/internal/plugintest"
	case rel == "sdk/go" || strings.HasPrefix(rel, "sdk/go/"):
		return "sdk/go"
	case strings.HasPrefix(rel, "sdk/"):
		return "sdk/tools"
	}
	first, _, _ := strings.Cut(rel, "/")
	return first
}

// mayImport says which layers a layer's packages may import (besides their
// own layer, the standard library and third-party modules), as README's
// Architecture section has it: cmd -> host -> (txn, state, runtime,
// connectors) -> abi, and the guest side (sdk/go, plugins) imports nothing
// of the host. Test files are not held to it.
var mayImport = map[string][]string{
	"abi":        {},
	"runtime":    {"abi"},
	"state":      {"abi"},
	"txn":        {"abi"},
	"connectors": {"abi"},
	"host":       {"abi", "runtime", "state", "txn", "connectors", "host/plugin/hosttest"},
	// The host's test harness runs the Go SDK's operators in the host.
	"host/plugin/hosttest": {"abi", "runtime", "state", "txn", "connectors", "host", "sdk/go"},
	"sdk/go":               {"abi"},
	// sdk/build and sdk/scaffold are the binary's plugin tools: they
	// check a built module with the host's loader.
	"sdk/tools": {"abi", "runtime", "host", "sdk/go"},
	// Guest code: the SDK and the benchmark workloads' event encodings
	// (txn/apps/*/event, leaves that import only their wire helpers).
	"plugins": {"abi", "sdk/go", "txn/apps/event"},
	// The example plugins' test support loads them into the host.
	"plugins/internal/plugintest": {"abi", "runtime", "txn", "host", "host/plugin/hosttest", "sdk/go", "plugins"},
	"cmd":                         {"abi", "runtime", "state", "txn", "connectors", "host", "host/plugin/hosttest", "sdk/go", "sdk/tools", "plugins"},
}

// isEventCodec reports whether rel is a workload's event encoding, or the
// wire helpers those use: the only part of txn/ that guests may import.
func isEventCodec(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 4 && parts[0] == "txn" && parts[1] == "apps" && parts[3] == "event" ||
		rel == "txn/apps/internal/wire"
}

// allowed reports whether a package of layer from may import package rel.
func allowed(from, rel string) bool {
	to := layer(rel)
	if to == from {
		return true
	}
	may := mayImport[from]
	if to == "txn" && isEventCodec(rel) && slices.Contains(may, "txn/apps/event") {
		return true
	}
	return slices.Contains(may, to)
}

// goList runs go list in dir with args and returns its lines.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestImportGraph holds every package of the host's module to mayImport,
// on its own imports (edges) and, for guest code, on everything it
// depends on; and the Go SDK's module to the SDK and the abi module.
func TestImportGraph(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	prefix := modulePath + "/"
	edges := map[string]map[string]bool{} // layer -> the layers it imports
	for _, line := range goList(t, ".", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		from := strings.TrimPrefix(f[0], prefix)
		l := layer(from)
		if _, ok := mayImport[l]; !ok {
			t.Errorf("%s: its layer %q has no rule in mayImport", from, l)
			continue
		}
		for _, imp := range f[1:] {
			rel, ok := strings.CutPrefix(imp, prefix)
			if !ok || layer(rel) == l {
				continue
			}
			if !allowed(l, rel) {
				t.Errorf("forbidden import: %s (%s) imports %s (%s)", from, l, rel, layer(rel))
			}
			if edges[l] == nil {
				edges[l] = map[string]bool{}
			}
			edges[l][display(rel)] = true
		}
	}
	// Guest code must not reach the host through what it imports either.
	for _, line := range goList(t, ".", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./plugins/...") {
		f := strings.Fields(line)
		from := strings.TrimPrefix(f[0], prefix)
		if layer(from) != "plugins" {
			continue
		}
		for _, dep := range f[1:] {
			if rel, ok := strings.CutPrefix(dep, prefix); ok && !allowed("plugins", rel) {
				t.Errorf("guest code %s depends on %s", from, rel)
			}
		}
	}
	// The Go SDK's module depends on itself, the abi module and the
	// standard library alone.
	sdk := filepath.Join("sdk", "go")
	for _, line := range goList(t, sdk, "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, "./...") {
		if line != "" && !strings.HasPrefix(line, prefix+"sdk/go/") && line != prefix+"abi" {
			t.Errorf("the Go SDK depends on %s", line)
		}
	}
	edges["sdk/go"] = map[string]bool{"abi": true}

	// README's Architecture section shows the same graph.
	var want strings.Builder
	for _, l := range slices.Sorted(maps.Keys(edges)) {
		fmt.Fprintf(&want, "    %-28s -> %s\n", l, strings.Join(slices.Sorted(maps.Keys(edges[l])), ", "))
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), want.String()) {
		t.Errorf("README.md's Architecture section does not show the import graph; it is:\n%s", want.String())
	}
}

// display names the layer of package rel in README's import graph: its
// layer, but the workloads' event encodings apart.
func display(rel string) string {
	if isEventCodec(rel) {
		return "txn/apps/*/event"
	}
	return layer(rel)
}
