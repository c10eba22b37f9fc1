//go:build !wasip1

package hosttest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// guests caches the modules built from testdata, one build and compile per
// guest for the whole test binary; TestMain closes them.
var guests = map[string]*hosttest.WasmModule{}

// closeGuests closes the modules loadGuest loaded; TestMain calls it.
func closeGuests() {
	for _, g := range guests {
		_ = g.Close(context.Background())
	}
}

// guestKinds is the operator kind each guest in testdata is loaded as.
var guestKinds = map[string]plugin.Kind{
	"mapguest":     plugin.KindMap,
	"inplaceguest": plugin.KindMap,
	"filterguest":  plugin.KindFilter,
	"flatmapguest": plugin.KindFlatMap,
	"keyedguest":   plugin.KindKeyed,
}

// loadGuest compiles the guest in testdata/dir to WebAssembly and loads it
// in the host as its kind.
func loadGuest(t *testing.T, dir string) *hosttest.WasmModule {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a WebAssembly module; skipped in -short mode")
	}
	if m, ok := guests[dir]; ok {
		return m
	}
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), dir+".wasm")
	if err := wasmbuild.Go(ctx, filepath.Join("testdata", dir), out); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := hosttest.LoadWasm(ctx, dir, wasm, guestKinds[dir])
	if err != nil {
		t.Fatal(err)
	}
	guests[dir] = m
	return m
}

func TestWasmMap(t *testing.T) {
	m := loadGuest(t, "mapguest")
	h := m.New()
	if err := h.Configure([]byte(`{"tag":"t1"}`)); err != nil {
		t.Fatal(err)
	}
	in := []sluice.Record{
		{Key: []byte("k0"), Value: []byte("abc"), Time: 10, Headers: []sluice.Header{{Name: []byte("h"), Value: []byte("v")}}},
		{Key: []byte("k1"), Value: []byte("bad"), Time: 11},
		{Key: []byte("k2"), Value: []byte("log"), Time: 12},
		{Value: []byte("xY1"), Time: 13},
	}
	outs, rejects, err := h.Process(in...)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 3 {
		t.Fatalf("got %d outputs, want 3: %+v", len(outs), outs)
	}
	want := []struct {
		origin int
		key    string
		value  string
		time   int64
	}{{0, "k0", "ABC", 10}, {2, "k2", "LOG", 12}, {3, "", "XY1", 13}}
	for i, w := range want {
		o := outs[i]
		if o.Origin != w.origin || string(o.Key) != w.key || string(o.Value) != w.value || o.Time != w.time {
			t.Errorf("output %d = origin %d key %q value %q time %d, want %+v", i, o.Origin, o.Key, o.Value, o.Time, w)
		}
		if tag, _ := o.Header("tag"); string(tag) != "t1" {
			t.Errorf("output %d tag header = %q, want t1", i, tag)
		}
	}
	if h0, _ := outs[0].Header("h"); string(h0) != "v" {
		t.Errorf("input header h not carried: %q", h0)
	}
	if len(rejects) != 1 || rejects[0].Origin != 1 || rejects[0].Message != "value is bad" {
		t.Errorf("rejects = %+v, want origin 1 'value is bad'", rejects)
	}
	logs := h.Logs()
	if len(logs) != 1 || logs[0].Level != sluice.LevelWarn || logs[0].Message != "record at 12 asked to log" {
		t.Errorf("logs = %+v", logs)
	}
}

// TestWasmMapInPlace runs a MapInPlace guest over a batch in which most
// records are forwarded as encoded and some are re-encoded, rejected or
// trap, and checks every output against what the handler means.
func TestWasmMapInPlace(t *testing.T) {
	m := loadGuest(t, "inplaceguest")
	h := m.New()
	hdr := []sluice.Header{{Name: []byte("h"), Value: []byte("v")}}
	in := []sluice.Record{
		{Key: []byte("k0"), Value: []byte("abc"), Time: 10, Headers: hdr},
		{Key: []byte("k1"), Value: []byte("rekey"), Time: 11},
		{Key: []byte("k2"), Value: []byte("bad"), Time: 12},
		{Value: []byte("tag"), Time: 13, Headers: hdr},
		{Key: []byte("k4"), Value: []byte("later"), Time: 14},
		{Key: []byte("k5"), Value: []byte("panic"), Time: 15},
		{Key: []byte("k6"), Time: 16},
		{Key: []byte("k7"), Value: []byte("xyz"), Time: 17},
	}
	outs, rejects, err := h.Process(in...)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		origin  int
		key     string
		value   string
		time    int64
		headers string
	}{
		{0, "k0", "ABC", 10, "[{h v}]"},
		{1, "re-k1", "REKEY", 11, "[]"},
		{3, "", "TAG", 13, "[{h v} {tag t}]"},
		{4, "k4", "LATER", 1014, "[]"},
		{6, "k6", "", 16, "[]"},
		{7, "k7", "XYZ", 17, "[]"},
	}
	if len(outs) != len(want) {
		t.Fatalf("got %d outputs, want %d: %+v", len(outs), len(want), outs)
	}
	for i, w := range want {
		o := outs[i]
		var hs []string
		for _, hd := range o.Headers {
			hs = append(hs, fmt.Sprintf("{%s %s}", hd.Name, hd.Value))
		}
		got := fmt.Sprintf("%d %q %q %d [%s]", o.Origin, o.Key, o.Value, o.Time, strings.Join(hs, " "))
		if exp := fmt.Sprintf("%d %q %q %d %s", w.origin, w.key, w.value, w.time, w.headers); got != exp {
			t.Errorf("output %d = %s, want %s", i, got, exp)
		}
	}
	if len(rejects) != 2 || rejects[0].Origin != 2 || rejects[0].Message != "value is bad" ||
		rejects[1].Origin != 5 || !errors.Is(rejects[1].Err, sluicetest.ErrTrap) || !strings.Contains(rejects[1].Err.Error(), "asked to panic") {
		t.Errorf("rejects = %+v, want record 2 rejected and record 5 trapped", rejects)
	}
}

func TestWasmBadConfig(t *testing.T) {
	m := loadGuest(t, "mapguest")
	h := m.New()
	err := h.Configure([]byte(`{"tag":""}`))
	if !errors.Is(err, sluicetest.ErrBadConfig) || !strings.Contains(err.Error(), `"tag" must not be empty`) {
		t.Fatalf("Configure = %v, want ErrBadConfig naming the field", err)
	}
	// Process configures again and fails the same way.
	if _, _, err := h.Process(sluicetest.KV("k", "v")); !errors.Is(err, sluicetest.ErrBadConfig) {
		t.Fatalf("Process after a bad configuration = %v, want ErrBadConfig", err)
	}
	// Without Configure the operator gets null and keeps its defaults.
	h2 := m.New()
	outs, _, err := h2.Process(sluicetest.KV("k", "v"))
	if err != nil {
		t.Fatal(err)
	}
	if tag, _ := outs[0].Header("tag"); string(tag) != "none" {
		t.Errorf("tag with a null configuration = %q, want none", tag)
	}
}

func TestWasmPanicTraps(t *testing.T) {
	m := loadGuest(t, "mapguest")
	h := m.New()
	// The panic traps the batch call; the host runs the records again one
	// at a time, on a fresh instance after each trap, and rejects only the
	// record that panics, with the panic message from the guest's stderr.
	outs, rejects, err := h.Process(sluicetest.KV("k", "log"), sluicetest.KV("k", "panic"), sluicetest.KV("k", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Origin != 0 || string(outs[0].Value) != "LOG" || outs[1].Origin != 2 || string(outs[1].Value) != "OK" {
		t.Errorf("outputs = %+v", outs)
	}
	var re *plugin.RecordError
	if len(rejects) != 1 || rejects[0].Origin != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) ||
		!errors.Is(rejects[0].Err, runtime.ErrTrap) || !errors.As(rejects[0].Err, &re) || re.Index != 1 ||
		!strings.Contains(rejects[0].Message, "asked to panic") {
		t.Fatalf("rejects = %+v, want record 1 trapped, quoting the panic", rejects)
	}
	// Record 0 ran twice, in the batch and alone; only the guest's own
	// messages are logged.
	logs := h.Logs()
	if len(logs) != 2 || logs[0] != logs[1] || logs[0].Message != "record at 0 asked to log" {
		t.Errorf("logs = %+v", logs)
	}
	// The instance that trapped last was replaced, as the host does.
	outs, _, err = h.Process(sluicetest.KV("k", "ok"))
	if err != nil || len(outs) != 1 || string(outs[0].Value) != "OK" {
		t.Fatalf("Process after a trap = %+v, %v", outs, err)
	}
}

func TestWasmFilter(t *testing.T) {
	h := loadGuest(t, "filterguest").New()
	hdr := []sluice.Header{{Name: []byte("a"), Value: []byte("1")}, {Name: []byte("b"), Value: nil}}
	outs, rejects, err := h.Process(
		sluice.Record{Key: []byte("k0"), Value: []byte("drop"), Time: 1},
		sluice.Record{Key: []byte("k1"), Value: []byte("keep me"), Time: -5, Headers: hdr},
		sluice.Record{Key: []byte("k2"), Value: []byte("err"), Time: 3},
		sluice.Record{Key: []byte("k3"), Value: []byte("keep"), Time: 4},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Origin != 1 || outs[1].Origin != 3 {
		t.Fatalf("outputs = %+v, want origins 1 and 3", outs)
	}
	o := outs[0]
	if string(o.Key) != "k1" || string(o.Value) != "keep me" || o.Time != -5 || len(o.Headers) != 2 ||
		string(o.Headers[0].Name) != "a" || string(o.Headers[0].Value) != "1" || string(o.Headers[1].Name) != "b" {
		t.Errorf("kept record changed: %+v", o)
	}
	if len(rejects) != 1 || rejects[0].Origin != 2 || rejects[0].Message != "value is err" {
		t.Errorf("rejects = %+v", rejects)
	}
	// A configuration is refused: the guest registers no Configure.
	if err := h.Configure([]byte(`{"x":1}`)); !errors.Is(err, sluicetest.ErrBadConfig) {
		t.Errorf("Configure on an operator without configuration = %v, want ErrBadConfig", err)
	}
	if err := h.Configure([]byte(" {} ")); err != nil {
		t.Errorf("Configure({}) = %v, want nil", err)
	}
}

func TestWasmFlatMap(t *testing.T) {
	h := loadGuest(t, "flatmapguest").New()
	outs, rejects, err := h.Process(
		sluice.Record{Key: []byte("a"), Value: []byte("x y z"), Time: 7},
		sluice.Record{Key: []byte("b"), Value: []byte("p fail q")},
		sluice.Record{Key: []byte("c"), Value: nil},
		sluice.Record{Key: []byte("d"), Value: []byte("w")},
	)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outs {
		got = append(got, string(o.Key)+":"+string(o.Value)+":"+strconv.Itoa(o.Origin))
	}
	if want := "a:x:0 a:y:0 a:z:0 d:w:3"; strings.Join(got, " ") != want {
		t.Errorf("outputs = %s, want %s (the failed record's outputs discarded)", strings.Join(got, " "), want)
	}
	if len(rejects) != 1 || rejects[0].Origin != 1 || rejects[0].Message != "field fail" {
		t.Errorf("rejects = %+v", rejects)
	}

	// 3 x 700 KiB of outputs cross the 1 MiB flush size twice; every
	// output arrives, in order, with its origin.
	outs, _, err = h.Process(
		sluice.Record{Value: []byte("many=700")},
		sluice.Record{Value: []byte("many=700 fail")},
		sluice.Record{Value: []byte("many=700")},
		sluice.Record{Value: []byte("many=700")},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2100 {
		t.Fatalf("got %d outputs, want 2100", len(outs))
	}
	for i, o := range outs {
		wantOrigin := []int{0, 2, 3}[i/700]
		if o.Origin != wantOrigin || string(o.Key) != strconv.Itoa(i%700) || len(o.Value) != 1024 {
			t.Fatalf("output %d: origin %d key %q len %d", i, o.Origin, o.Key, len(o.Value))
		}
	}
}

func TestWasmKeyed(t *testing.T) {
	m := loadGuest(t, "keyedguest")
	h := m.New().Declare("counts", "last")
	outs, rejects, err := h.Process(
		sluicetest.KV("a", "x"),
		sluicetest.KV("b", "grow=5000"),
		sluicetest.KV("a", "yy"),
		sluicetest.KV("a", "fail"),
		sluicetest.KV("b", "grow=100"),
	)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range outs {
		l, _ := o.Header("last-len")
		got = append(got, string(o.Key)+"="+string(o.Value)+"/"+string(l))
	}
	if want := "a=1/1 b=1/5000 a=2/2 b=2/100"; strings.Join(got, " ") != want {
		t.Errorf("outputs = %s, want %s", strings.Join(got, " "), want)
	}
	if len(rejects) != 1 || rejects[0].Origin != 3 || rejects[0].Message != "failed on purpose" {
		t.Errorf("rejects = %+v", rejects)
	}
	if v, _ := h.State("counts", "a"); string(v) != "2" {
		t.Errorf("count of a = %q, want 2", v)
	}
	// The rejected record left no trace: its write to "last" was undone.
	if v, _ := h.State("last", "a"); string(v) != "yy" {
		t.Errorf("last of a = %q, want yy: a rejected record's write must be undone", v)
	}

	// State survives a trap: the new instance reads it from the host.
	_, rejects, err = h.Process(sluicetest.KV("a", "undeclared"))
	if err != nil || len(rejects) != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) ||
		!strings.Contains(rejects[0].Message, `state table "undeclared" is not declared`) {
		t.Fatalf("Process = %+v, %v, want a trap naming the table", rejects, err)
	}
	h.SetState("", "c", []byte("41"))
	outs, _, err = h.Process(sluicetest.KV("c", "z"), sluicetest.KV("a", "del"), sluicetest.KV("a", "w"))
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || string(outs[0].Value) != "42" || string(outs[1].Value) != "1" {
		t.Errorf("outputs after SetState and del = %+v", outs)
	}

	// Without declared tables the handler's first state call traps.
	_, rejects, err = m.New().Process(sluicetest.KV("a", "x"))
	if err != nil || len(rejects) != 1 || !errors.Is(rejects[0].Err, sluicetest.ErrTrap) ||
		!strings.Contains(rejects[0].Message, `state table "last" is not declared`) {
		t.Errorf("Process without tables = %+v, %v, want a trap", rejects, err)
	}
}
