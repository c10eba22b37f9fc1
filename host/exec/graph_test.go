package exec

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
)

func TestResolveGraph(t *testing.T) {
	srcs := []Input{{Name: "a"}, {Name: "b"}}
	for name, tc := range map[string]struct {
		ops   []Operator
		sinks []Output
		order []string
		err   string
	}{
		"chain": {
			ops:   []Operator{{Name: "x"}, {Name: "y"}},
			sinks: []Output{{Name: "s"}},
			order: []string{"x", "y"},
		},
		"join listed before its inputs": {
			ops:   []Operator{{Name: "j", Inputs: []string{"x", "y"}}, {Name: "x", Inputs: []string{"a"}}, {Name: "y", Inputs: []string{"b"}}},
			sinks: []Output{{Name: "s", Inputs: []string{"j"}}},
			order: []string{"x", "y", "j"},
		},
		"cycle": {
			ops:   []Operator{{Name: "x", Inputs: []string{"a", "y"}}, {Name: "y", Inputs: []string{"x", "b"}}},
			sinks: []Output{{Name: "s", Inputs: []string{"y"}}},
			err:   `operators "x", "y" read each other's outputs in a cycle`,
		},
		"self": {
			ops:   []Operator{{Name: "x", Inputs: []string{"x", "a", "b"}}},
			sinks: []Output{{Name: "s"}},
			err:   `operator "x" reads its own output`,
		},
		"unknown": {
			ops:   []Operator{{Name: "x", Inputs: []string{"c"}}},
			sinks: []Output{{Name: "s"}},
			err:   `operator "x" names input "c", which is no source or operator`,
		},
		"twice": {
			ops:   []Operator{{Name: "x", Inputs: []string{"a", "a"}}},
			sinks: []Output{{Name: "s"}},
			err:   `operator "x" names input "a" twice`,
		},
		"clash": {
			ops:   []Operator{{Name: "a"}},
			sinks: []Output{{Name: "s"}},
			err:   `operator "a" has the name of a source`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := &Config{Sources: srcs, Operators: tc.ops, Sinks: tc.sinks}
			g, err := resolve(cfg)
			if tc.err != "" {
				if !errors.Is(err, ErrGraph) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("resolve = %v, want ErrGraph saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, i := range g.order {
				order = append(order, tc.ops[i].Name)
			}
			if !slices.Equal(order, tc.order) {
				t.Errorf("order %v, want %v", order, tc.order)
			}
		})
	}
}

// TestUnreadRefused: a source or operator whose records nothing reads is
// a mistake in the file, refused before anything runs.
func TestUnreadRefused(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	_, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "a", Source: &sliceSource{}}, {Name: "b", Source: &sliceSource{}}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Inputs: []string{"a"}}},
		Sinks:     []Output{{Name: "out", Sink: &memSink{}}}, Store: store,
	})
	if !errors.Is(err, ErrGraph) || !strings.Contains(err.Error(), `nothing reads the records of source "b"`) {
		t.Fatalf("New = %v, want ErrGraph naming source b", err)
	}
}

// TestGraphFanOutAndFanIn runs two sources through two operators into two
// sinks: out1 reads both operators (fan-in, in the order the sources
// delivered the records), out2 reads one (fan-out of "up").
func TestGraphFanOutAndFanIn(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	a := &sliceSource{recs: records("a1", "a2", "a3"), chunk: 1}
	b := &sliceSource{recs: records("B1", "B2"), chunk: 1}
	out1, out2, dead := &memSink{}, &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "a", Source: a}, {Name: "b", Source: b}},
		Operators: []Operator{
			{Name: "low", Kind: plugin.KindMap, Plugin: load(t, "lower", plugin.KindMap, 0), Inputs: []string{"b"}},
			{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Inputs: []string{"a"}, Parallelism: 2},
		},
		Sinks: []Output{
			{Name: "out1", Sink: out1, Inputs: []string{"up", "low"}},
			{Name: "out2", Sink: out2, Inputs: []string{"up"}},
		},
		DeadLetter: dead, Store: store, BatchSize: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got1 := values(out1)
	slices.Sort(got1)
	if want := []string{"A1", "A2", "A3", "b1", "b2"}; !slices.Equal(got1, want) {
		t.Errorf("out1 %v, want %v", got1, want)
	}
	if got2, want := values(out2), []string{"A1", "A2", "A3"}; !slices.Equal(got2, want) {
		t.Errorf("out2 %v, want %v", got2, want)
	}
	ids := map[string]bool{}
	for _, o := range out1.records() {
		if ids[o.ID] {
			t.Errorf("out1: id %q twice", o.ID)
		}
		ids[o.ID] = true
	}
	if st := job.Status(); st.Outputs != 8 || st.Operators[0].RecordsIn != 2 || st.Operators[1].RecordsIn != 3 {
		t.Errorf("status: %d outputs (want 8), low in %d (want 2), up in %d (want 3)", st.Outputs, st.Operators[0].RecordsIn, st.Operators[1].RecordsIn)
	}
}

// TestGatherMergesByArrival merges two operators' streams by the batch
// input each record descends from and numbers each record's input.
func TestGatherMergesByArrival(t *testing.T) {
	j := &Job{cfg: Config{Sources: []Input{{Name: "a"}}}}
	x := &node{recs: records("x0", "x3"), idx: []int32{0, 3}}
	y := &node{recs: records("y1", "y2", "y3"), idx: []int32{1, 2, 3}}
	j.nodes = []*node{x, y}
	var merged []abi.Record
	var idx []int32
	recs, gotIdx := j.gather(&batch{}, []ref{{src: -1, op: 0}, {src: -1, op: 1}}, &merged, &idx, nil)
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value)+"/"+string(rune('0'+r.Input)))
	}
	if want := []string{"x0/0", "y1/1", "y2/1", "x3/0", "y3/1"}; !slices.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if want := []int32{0, 1, 2, 3, 3}; !slices.Equal(gotIdx, want) {
		t.Errorf("idx %v, want %v", gotIdx, want)
	}
}

// TestGraphGuestSeesInputs: a two-input operator's guest sees each
// record's input, numbered in the order the operator names them, and the
// first operator of a file that names no inputs sees each record's source.
func TestGraphGuestSeesInputs(t *testing.T) {
	for name, tc := range map[string]struct {
		inputs []string
		want   []string
	}{
		"named":   {[]string{"b", "a"}, []string{"0:B1", "1:a1", "0:B2", "1:a2"}},
		"default": {nil, []string{"1:B1", "0:a1", "1:B2", "0:a2"}},
	} {
		t.Run(name, func(t *testing.T) {
			store := openStore(t, t.TempDir())
			defer store.Close()
			// One record a read, the b source read first: the test sends
			// each record when the last one has gone through.
			a, b := newChanSource(), newChanSource()
			sink := &memSink{}
			job, err := New(context.Background(), Config{
				Name: "p", Sources: []Input{{Name: "a", Source: a}, {Name: "b", Source: b}},
				Operators: []Operator{{Name: "tag", Kind: plugin.KindMap, Plugin: load(t, "inputs", plugin.KindMap, 0), Inputs: tc.inputs}},
				Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: store, BatchSize: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- job.Run(ctx) }()
			for i, v := range []string{"B1", "a1", "B2", "a2"} {
				src := a
				if v[0] == 'B' {
					src = b
				}
				src.ch <- records(v)
				waitFor(t, func() bool { return len(sink.records()) == i+1 })
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := values(sink); !slices.Equal(got, tc.want) {
				t.Errorf("outputs %v, want %v", got, tc.want)
			}
		})
	}
}
