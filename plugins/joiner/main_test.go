package main

import (
	"encoding/binary"
	"os"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

// joiner is what sluicetest.Harness and hosttest.Harness both offer for
// join functions.
type joiner interface {
	Join(key []byte, w *sluice.Window, left, right *sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error)
}

var win = &sluice.Window{Start: 100, End: 200}

func rec(v string, t int64) *sluice.Record {
	return &sluice.Record{Key: []byte("k"), Value: []byte(v), Time: t}
}

// pairs are the cases both harnesses run.
var pairs = []struct {
	w    *sluice.Window
	l, r *sluice.Record
}{
	{win, rec("a", 110), rec("b", 120)},
	{win, rec("a", 110), nil},
	{win, nil, rec("b", 120)},
	{nil, rec("a", 110), rec("b", 150)},
	{nil, rec("a", 170), rec("b", 150)},
	{win, rec("twice", 110), rec("b", 120)},
	{win, rec("none", 110), rec("b", 120)},
	{win, rec("a", 110), rec("bad", 120)},
	{nil, rec("bad", 110), nil},
}

func TestJoiner(t *testing.T) {
	h := sluicetest.New()
	outs, rejects, err := h.Join([]byte("k"), win, rec("a", 110), rec("b", 120))
	if err != nil || len(rejects) > 0 || len(outs) != 1 {
		t.Fatal(outs, rejects, err)
	}
	o := outs[0]
	w, ok := o.Header("window")
	if string(o.Key) != "k" || string(o.Value) != "a|b" || o.Time != 199 || !ok ||
		binary.LittleEndian.Uint64(w) != 100 || binary.LittleEndian.Uint64(w[8:]) != 200 {
		t.Errorf("result %+v, want k a|b at 199 with window [100, 200)", o)
	}
	outs, _, _ = h.Join([]byte("k"), nil, nil, rec("b", 150))
	if len(outs) != 1 || string(outs[0].Value) != "-|b" || outs[0].Time != 150 || len(outs[0].Headers) != 0 {
		t.Errorf("a right record alone, no window: %+v, want -|b at 150 without headers", outs)
	}
	outs, rejects, err = h.Join([]byte("k"), win, rec("a", 110), rec("bad", 120))
	if err != nil || len(outs) > 0 || len(rejects) != 1 || rejects[0].Message != "bad value in pair" {
		t.Errorf("a bad value: %v, %+v, %+v; want the pair rejected", err, outs, rejects)
	}
}

// The compiled plugin, in the host, does what the native one does.
func TestJoinerInWasm(t *testing.T) {
	wasm := plugintest.Module(t, plugin.KindJoin).New()
	defer wasm.Close()
	for _, p := range pairs {
		var got, want [2]any
		for i, h := range []joiner{wasm, sluicetest.New()} {
			outs, rejects, err := h.Join([]byte("k"), p.w, p.l, p.r)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				got = [2]any{outs, rejects}
			} else {
				want = [2]any{outs, rejects}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v %v %v: in wasm %+v, natively %+v", p.w, p.l, p.r, got, want)
		}
	}
}
