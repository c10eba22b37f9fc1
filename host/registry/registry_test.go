package registry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// minimal is the smallest module: the magic number and version 1.
var minimal = []byte("\x00asm\x01\x00\x00\x00")

func TestReadVersion(t *testing.T) {
	if v, err := ReadVersion(minimal); err != nil || v != "" {
		t.Errorf("no section: %q, %v", v, err)
	}
	m, err := AppendVersion(minimal, "1.2.3-rc1+abc")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ReadVersion(m); err != nil || v != "1.2.3-rc1+abc" {
		t.Errorf("ReadVersion = %q, %v", v, err)
	}
	// Other custom sections are skipped.
	other := append(append([]byte(nil), minimal...), 0, 4, 3, 'a', 'b', 'c')
	m2, _ := AppendVersion(other, "v9")
	if v, err := ReadVersion(m2); err != nil || v != "v9" {
		t.Errorf("after another custom section: %q, %v", v, err)
	}
	twice, _ := AppendVersion(m, "again")
	for name, tc := range map[string]struct {
		wasm []byte
		want string
	}{
		"not wasm":  {[]byte("hello world"), "not a WebAssembly module"},
		"truncated": {append(append([]byte(nil), minimal...), 0, 50, 1), "runs past the end"},
		"twice":     {twice, "two"},
		"control":   {append(append([]byte(nil), minimal...), 0, 16, 14, 's', 'l', 'u', 'i', 'c', 'e', '.', 'v', 'e', 'r', 's', 'i', 'o', 'n', 1), "not UTF-8 text"},
	} {
		if _, err := ReadVersion(tc.wasm); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
	if _, err := AppendVersion(minimal, ""); err == nil {
		t.Error("AppendVersion accepted an empty version")
	}
	if _, err := AppendVersion(minimal, strings.Repeat("x", 300)); err == nil {
		t.Error("AppendVersion accepted a 300-byte version")
	}
}

// mapModule builds plugins/upper, a map operator.
func mapModule(t *testing.T) []byte {
	t.Helper()
	mods, err := wasmbuild.GoModules(context.Background(), map[string]string{"upper": "../../plugins/upper"})
	if err != nil {
		t.Fatal(err)
	}
	return mods["upper"]
}

func TestAddListDeployments(t *testing.T) {
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	dir := t.TempDir()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r.now = func() time.Time { clock = clock.Add(time.Second); return clock }

	if _, err := r.Add(ctx, eng, "junk.wasm", []byte("junk")); !errors.Is(err, ErrInvalid) {
		t.Errorf("Add(junk) = %v, want ErrInvalid", err)
	}
	wasm := mapModule(t)
	v1, err := AppendVersion(wasm, "1.0")
	if err != nil {
		t.Fatal(err)
	}
	e1, err := r.Add(ctx, eng, "/some/where/op.wasm", v1)
	if err != nil {
		t.Fatal(err)
	}
	if e1.Name != "op.wasm" || e1.Version != "1.0" || e1.ABIVersion != 1 || len(e1.SHA256) != 64 || e1.Size != len(v1) ||
		!strings.Contains(strings.Join(e1.Kinds, ","), "map") || len(e1.Exports) == 0 {
		t.Errorf("entry %+v", e1)
	}
	again, err := r.Add(ctx, eng, "renamed.wasm", v1)
	if err != nil || again.Name != "op.wasm" || !again.Deployed.Equal(e1.Deployed) {
		t.Errorf("adding the same bytes again: %+v, %v; want the first entry", again, err)
	}
	// A check cut short by the end of its context does not call the
	// module invalid, and stores nothing.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Add(done, eng, "plain.wasm", wasm); !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) {
		t.Errorf("Add with a cancelled context = %v, want context.Canceled, not ErrInvalid", err)
	}
	if _, err := r.Get(Hash(wasm)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a check cut short stored the module: Get = %v", err)
	}
	e2, err := r.Add(ctx, eng, "plain.wasm", wasm)
	if err != nil || e2.Version != "" || e2.Label() != "sha256:"+e2.SHA256[:12] {
		t.Errorf("unversioned: %+v, %v", e2, err)
	}
	// A second registry over the same directory sees the same.
	r2, _ := Open(dir)
	list, err := r2.List()
	if err != nil || len(list) != 2 || list[0].SHA256 != e1.SHA256 || list[1].SHA256 != e2.SHA256 {
		t.Errorf("List = %+v, %v", list, err)
	}
	got, err := r2.Module(e1.SHA256)
	if err != nil || string(got) != string(v1) {
		t.Errorf("Module = %d bytes, %v", len(got), err)
	}
	if _, err := r2.Get("0000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(unknown) = %v", err)
	}
	for _, d := range []Deployment{{Operator: "a", SHA256: e1.SHA256, Reason: "start"}, {Operator: "b", SHA256: e2.SHA256, Reason: "start"},
		{Operator: "a", SHA256: e2.SHA256, Reason: "swap"}} {
		if err := r.Record(d); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := r2.Deployments("a")
	if err != nil || len(ds) != 2 || ds[1].Reason != "swap" || ds[1].At.IsZero() {
		t.Errorf("Deployments(a) = %+v, %v", ds, err)
	}
	if all, _ := r2.Deployments(""); len(all) != 3 {
		t.Errorf("%d deployments, want 3", len(all))
	}
}

func BenchmarkReadVersion(b *testing.B) {
	m, _ := AppendVersion(minimal, "1.0.0")
	for b.Loop() {
		if _, err := ReadVersion(m); err != nil {
			b.Fatal(err)
		}
	}
}
