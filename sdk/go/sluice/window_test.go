package sluice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
)

// countAgg counts records per key (8-byte accumulator) and rejects those
// whose value is "bad".
type countAgg struct{}

func (countAgg) Add(acc []byte, r Record) ([]byte, error) {
	if string(r.Value) == "bad" {
		return nil, errors.New("bad value")
	}
	if acc == nil {
		acc = make([]byte, 8)
	}
	binary.LittleEndian.PutUint64(acc, binary.LittleEndian.Uint64(acc)+1)
	return acc, nil
}

func (countAgg) Merge(a, b []byte) ([]byte, error) {
	if len(a) != 8 || len(b) != 8 {
		return nil, errors.New("not a count")
	}
	binary.LittleEndian.PutUint64(a, binary.LittleEndian.Uint64(a)+binary.LittleEndian.Uint64(b))
	return a, nil
}

func (countAgg) Fire(key []byte, w Window, acc []byte, out *Emitter) error {
	if string(key) == "nofire" {
		return errors.New("refused")
	}
	out.Emit(Record{Key: key, Value: fmt.Appendf(nil, "%d@%d-%d/%s", binary.LittleEndian.Uint64(acc), w.Start, w.End, w.Firing)})
	return nil
}

func u64(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }

// call hands input to export of g, as the host does.
func call(g *guest, fn func([]byte) int32, input []byte) int32 {
	region := g.alloc(int32(len(input)))
	copy(region, input)
	return fn(region)
}

func group(b []byte, head abi.Record, members ...abi.Record) []byte {
	return abi.AppendGroup(b, &head, members)
}

func firing(key string, start, end int64, f Firing) abi.Record {
	return abi.Record{Key: []byte(key), Time: end - 1, Headers: []abi.Header{
		{Name: []byte(abi.HeaderWindowStart), Value: abi.AppendWindowTime(nil, start)},
		{Name: []byte(abi.HeaderWindowEnd), Value: abi.AppendWindowTime(nil, end)},
		{Name: []byte(abi.HeaderFiring), Value: []byte(f.String())},
	}}
}

func TestAggregateExports(t *testing.T) {
	host := newRecHost()
	g := newGuest(&handlers{kind: kindAggregate, name: "Aggregate", aggregate: countAgg{}}, host)
	if g.kinds() != abi.KindBitAggregate {
		t.Errorf("kinds %d", g.kinds())
	}
	in := abi.AppendBatchHeader(nil, 2)
	in = group(in, abi.Record{Origin: 0, Key: []byte("a")}, abi.Record{Origin: 0, Value: []byte("x")}, abi.Record{Origin: 1, Value: []byte("bad")})
	in = group(in, abi.Record{Origin: 1, Key: []byte("b"), Value: u64(5)}, abi.Record{Origin: 2, Value: []byte("y")})
	if st := call(g, g.aggAdd, in); st != abi.StatusOK {
		t.Fatalf("add: status %d, logs %v", st, host.logs)
	}
	outs := host.outputs()
	if len(outs) != 2 || outs[0].Origin != 0 || binary.LittleEndian.Uint64(outs[0].Value) != 1 ||
		outs[1].Origin != 1 || binary.LittleEndian.Uint64(outs[1].Value) != 6 {
		t.Errorf("add: outputs %+v", outs)
	}
	if !slices.Equal(host.rejects, []string{"1:bad value"}) {
		t.Errorf("add: rejects %q", host.rejects)
	}

	host.emits = nil
	in = abi.AppendBatchHeader(nil, 2)
	in = abi.AppendRecord(in, &abi.Record{Origin: 0, Value: u64(2)})
	in = abi.AppendRecord(in, &abi.Record{Origin: 1, Value: u64(3)})
	if st := call(g, g.aggMerge, in); st != abi.StatusOK {
		t.Fatalf("merge: status %d, logs %v", st, host.logs)
	}
	if outs := host.outputs(); len(outs) != 1 || binary.LittleEndian.Uint64(outs[0].Value) != 5 {
		t.Errorf("merge: outputs %+v", outs)
	}

	host.emits, host.rejects = nil, nil
	in = abi.AppendBatchHeader(nil, 2)
	f0 := firing("a", 10, 20, Late)
	f0.Value = u64(4)
	f1 := firing("nofire", 0, 10, OnTime)
	f1.Origin, f1.Value = 1, u64(1)
	in = abi.AppendRecord(in, &f0)
	in = abi.AppendRecord(in, &f1)
	if st := call(g, g.aggFire, in); st != abi.StatusOK {
		t.Fatalf("fire: status %d, logs %v", st, host.logs)
	}
	if outs := host.outputs(); len(outs) != 1 || outs[0].Origin != 0 || string(outs[0].Value) != "4@10-20/late" {
		t.Errorf("fire: outputs %+v", outs)
	}
	if !slices.Equal(host.rejects, []string{"1:refused"}) {
		t.Errorf("fire: rejects %q", host.rejects)
	}

	// A window export of another kind, and malformed input, fail the call.
	if st := call(g, g.windowFire, abi.AppendBatchHeader(nil, 0)); st != abi.StatusError || !strings.Contains(host.logs[len(host.logs)-1], "registers its handler with sluice.Aggregate, not sluice.WindowFunc") {
		t.Errorf("window fire on an aggregate: status %d, logs %v", st, host.logs)
	}
	if st := call(g, g.aggAdd, []byte{1, 0, 0, 0, 9}); st != abi.StatusError {
		t.Errorf("malformed add: status %d", st)
	}
	if st := call(g, g.process, encode(kv("a", "b"))); st != abi.StatusError {
		t.Errorf("process on an aggregate: status %d", st)
	}
}

// An accumulator of no bytes would read as none: Add must not return one.
func TestAggregateEmptyAccumulator(t *testing.T) {
	host := newRecHost()
	empty := aggFuncs{add: func(acc []byte, r Record) ([]byte, error) { return nil, nil }}
	g := newGuest(&handlers{kind: kindAggregate, name: "Aggregate", aggregate: empty}, host)
	in := group(abi.AppendBatchHeader(nil, 1), abi.Record{}, abi.Record{Value: []byte("x")})
	if st := call(g, g.aggAdd, in); st != abi.StatusError || !strings.Contains(strings.Join(host.logs, "\n"), "empty accumulator") {
		t.Errorf("status %d, logs %v", st, host.logs)
	}
}

type aggFuncs struct {
	add func([]byte, Record) ([]byte, error)
}

func (a aggFuncs) Add(acc []byte, r Record) ([]byte, error)  { return a.add(acc, r) }
func (aggFuncs) Merge(a, b []byte) ([]byte, error)           { return a, nil }
func (aggFuncs) Fire([]byte, Window, []byte, *Emitter) error { return nil }

func TestWindowFuncExport(t *testing.T) {
	host := newRecHost()
	median := func(key []byte, w Window, recs []Record, out *Emitter) error {
		var vs []int
		var hs []string
		for _, r := range recs {
			v, err := strconv.Atoi(string(r.Value))
			if err != nil {
				return err
			}
			vs = append(vs, v)
			h, _ := r.Header("h")
			hs = append(hs, string(h))
		}
		slices.Sort(vs)
		out.Emit(Record{Key: key, Value: fmt.Appendf(nil, "%d %s %d", vs[len(vs)/2], strings.Join(hs, ","), w.Start)})
		return nil
	}
	g := newGuest(&handlers{kind: kindWindow, name: "WindowFunc", windowFn: median}, host)
	hdr := func(v string) []abi.Header { return []abi.Header{{Name: []byte("h"), Value: []byte(v)}} }
	in := abi.AppendBatchHeader(nil, 2)
	in = group(in, firing("a", 0, 10, OnTime),
		abi.Record{Origin: 0, Value: []byte("5"), Headers: hdr("p")},
		abi.Record{Origin: 1, Value: []byte("1")},
		abi.Record{Origin: 2, Value: []byte("9"), Headers: hdr("q")})
	b := firing("b", 10, 20, Early)
	b.Origin = 1
	in = group(in, b, abi.Record{Origin: 3, Value: []byte("x")}, abi.Record{Origin: 4, Value: []byte("2")})
	if st := call(g, g.windowFire, in); st != abi.StatusOK {
		t.Fatalf("status %d, logs %v", st, host.logs)
	}
	if outs := host.outputs(); len(outs) != 1 || outs[0].Origin != 0 || string(outs[0].Value) != "5 p,,q 0" {
		t.Errorf("outputs %+v", outs)
	}
	if len(host.rejects) != 2 || !strings.HasPrefix(host.rejects[0], "3:") || !strings.HasPrefix(host.rejects[1], "4:") {
		t.Errorf("rejects %q, want the failed window's records 3 and 4", host.rejects)
	}
	if g.kinds() != abi.KindBitWindow {
		t.Errorf("kinds %d", g.kinds())
	}
}
