package runner

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// cacheFiles returns the files of the compilation cache in dir, by path.
func cacheFiles(t *testing.T, dir string) map[string]fs.FileInfo {
	t.Helper()
	files := map[string]fs.FileInfo{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		files[path] = info
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// startSwapPipeline writes upper.wasm and the swap pipeline, with its
// compilation cache in dir/cache and the HTTP API on a free port, into
// dir, and starts it; it returns the host and the lower module to swap in.
func startSwapPipeline(t *testing.T, dir string) (*Host, []byte) {
	t.Helper()
	return startSwapPipelineWith(t, dir, Options{})
}

// startSwapPipelineWith is startSwapPipeline with the host's options
// (their data directory is dir/data).
func startSwapPipelineWith(t *testing.T, dir string, opts Options) (*Host, []byte) {
	t.Helper()
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"upper": "../../plugins/upper", "lower": "../exec/testdata/lower"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "upper.wasm"), versioned(t, mods["upper"], "upper-1.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "p.yaml"), "compile_cache: cache\n"+swapPipeline)
	opts.DataDir = filepath.Join(dir, "data")
	h := startPipeline(ctx, t, dir, opts)
	return h, versioned(t, mods["lower"], "lower-2.0")
}

// TestSwapCompilesIntoTheCacheFirst checks that a swapped-in module is in
// the compilation cache (compile_cache) when the swap is answered, and
// that a restart, which runs that module, finds it there and does not
// compile it again.
func TestSwapCompilesIntoTheCacheFirst(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, lower := startSwapPipeline(t, dir)
	cache := filepath.Join(dir, "cache")
	stop := runInBackground(ctx, h)
	before := cacheFiles(t, cache)
	if len(before) == 0 {
		t.Fatalf("nothing in the pipeline's compile_cache %s after its start", cache)
	}
	if _, err := h.Swap(ctx, "case", "lower.wasm", lower); err != nil {
		t.Fatal(err)
	}
	after := cacheFiles(t, cache)
	if len(after) != len(before)+1 {
		t.Fatalf("the cache held %d entries before the swap and %d once it was answered, want one more", len(before), len(after))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	p, err := pipeline.Load(filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h, err = Start(ctx, p, Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: "off", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if v := h.Status().Operators[0].Version; v != "lower-2.0" {
		t.Fatalf("restarted with %q, want the swapped-in lower-2.0", v)
	}
	restarted := cacheFiles(t, cache)
	for path, info := range after {
		if now, ok := restarted[path]; !ok || !os.SameFile(info, now) {
			t.Errorf("cache entry %s was written again by the restart: it compiled what the cache held", path)
		}
	}
	if len(restarted) != len(after) {
		t.Errorf("the restart added %d cache entries", len(restarted)-len(after))
	}
}

// TestSwapWithAnUnusableCache swaps in a valid module while the
// compilation cache cannot be used (its directory replaced by a regular
// file, as a full disk or lost permissions would): the API answers with a
// server error naming the cache, not 422, which says the module is bad.
func TestSwapWithAnUnusableCache(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h, lower := startSwapPipeline(t, dir)
	stop := runInBackground(ctx, h)
	defer stop()
	cache := filepath.Join(dir, "cache")
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cache, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	token, err := ReadToken(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+h.HTTPAddr()+"/api/v1/operators/case/swap?file=lower.wasm", bytes.NewReader(lower))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), cache) ||
		strings.Contains(string(body), "not a valid WebAssembly module") {
		t.Errorf("swap with an unusable cache: %d %s; want 500 naming %s", resp.StatusCode, body, cache)
	}
	if v := h.Status().Operators[0].Version; v != "upper-1.0" {
		t.Errorf("runs %q after the failed swap, want upper-1.0", v)
	}
}
