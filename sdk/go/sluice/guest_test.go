package sluice

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

// recHost is a host that records every call, for testing the guest core
// without the sluicetest harness (which imports this package).
type recHost struct {
	emits    [][]abi.Record // decoded copies of each emit call
	raw      [][]byte       // each emit call's batch itself, not a copy
	rejects  []string       // "origin:message"
	logs     []string       // "level:message"
	tables   map[string]int32
	state    map[int32]map[string][]byte
	tableIDs int // TableID calls
	gets     int // StateGet calls
}

func newRecHost(tables ...string) *recHost {
	h := &recHost{tables: map[string]int32{}, state: map[int32]map[string][]byte{}}
	for i, name := range tables {
		h.tables[name] = int32(i)
		h.state[int32(i)] = map[string][]byte{}
	}
	return h
}

func (h *recHost) Emit(batch []byte) {
	d, err := abi.NewDecoder(batch)
	if err != nil {
		panic(err)
	}
	d.AllowInputs(true) // a forwarded record keeps its input, which the host ignores
	var out []abi.Record
	var r abi.Record
	for d.Next(&r) {
		c := abi.Record{Origin: r.Origin, Time: r.Time, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
		for _, hd := range r.Headers {
			c.Headers = append(c.Headers, abi.Header{Name: bytes.Clone(hd.Name), Value: bytes.Clone(hd.Value)})
		}
		out = append(out, c)
	}
	if err := d.Err(); err != nil {
		panic(err)
	}
	h.emits = append(h.emits, out)
	h.raw = append(h.raw, batch)
}

func (h *recHost) Reject(origin uint32, msg string) {
	h.rejects = append(h.rejects, fmt.Sprintf("%d:%s", origin, msg))
}

func (h *recHost) TableID(name string) int32 {
	h.tableIDs++
	if id, ok := h.tables[name]; ok {
		return id
	}
	return abi.StatusNotFound
}

func (h *recHost) StateGet(table int32, key, buf []byte) int32 {
	h.gets++
	v, ok := h.state[table][string(key)]
	if !ok {
		return abi.StatusNotFound
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func (h *recHost) StatePut(table int32, key, value []byte) {
	h.state[table][string(key)] = bytes.Clone(value)
}

func (h *recHost) StateDelete(table int32, key []byte) { delete(h.state[table], string(key)) }

func (h *recHost) Log(level int32, msg string) {
	h.logs = append(h.logs, fmt.Sprintf("%d:%s", level, msg))
}

// outputs flattens every emitted record.
func (h *recHost) outputs() []abi.Record {
	var all []abi.Record
	for _, e := range h.emits {
		all = append(all, e...)
	}
	return all
}

// encode builds an input batch as the host does: record i has origin i.
func encode(recs ...abi.Record) []byte {
	b := abi.AppendBatchHeader(nil, uint32(len(recs)))
	for i := range recs {
		recs[i].Origin = uint32(i)
		b = abi.AppendRecord(b, &recs[i])
	}
	return b
}

// run allocates a region, copies batch into it and processes it, as the
// wasm export sequence sluice_alloc, write, sluice_process does.
func run(g *guest, batch []byte) int32 {
	region := g.alloc(int32(len(batch)))
	copy(region, batch)
	return g.process(region)
}

func kv(k, v string) abi.Record { return abi.Record{Key: []byte(k), Value: []byte(v)} }

func TestMapOutputsAndRejects(t *testing.T) {
	host := newRecHost()
	g := newGuest(&handlers{kind: kindMap, mapFn: func(r Record) (Record, error) {
		if string(r.Value) == "bad" {
			return Record{}, errors.New("bad value")
		}
		r.Value = bytes.ToUpper(r.Value)
		r.Time++
		return r, nil
	}}, host)
	in := []abi.Record{kv("a", "x"), kv("b", "bad"), kv("c", "y")}
	in[0].Time = 100
	in[2].Headers = []abi.Header{{Name: []byte("h"), Value: []byte("v")}}
	if st := run(g, encode(in...)); st != abi.StatusOK {
		t.Fatalf("status %d, logs %v", st, host.logs)
	}
	if len(host.emits) != 1 {
		t.Fatalf("%d emit calls, want one per batch", len(host.emits))
	}
	out := host.outputs()
	if len(out) != 2 || out[0].Origin != 0 || string(out[0].Value) != "X" || out[0].Time != 101 ||
		out[1].Origin != 2 || string(out[1].Value) != "Y" || string(out[1].Headers[0].Value) != "v" {
		t.Errorf("outputs = %+v", out)
	}
	if want := []string{"1:bad value"}; fmt.Sprint(host.rejects) != fmt.Sprint(want) {
		t.Errorf("rejects = %v, want %v", host.rejects, want)
	}

	// A batch without outputs makes no emit call; an empty batch is fine.
	host.emits = nil
	if st := run(g, encode(kv("z", "bad"))); st != abi.StatusOK || len(host.emits) != 0 {
		t.Errorf("status %d, %d emit calls, want OK and none", st, len(host.emits))
	}
	if st := run(g, encode()); st != abi.StatusOK || len(host.emits) != 0 {
		t.Errorf("empty batch: status %d, %d emit calls", st, len(host.emits))
	}
}

func TestFilterForwardsRecordsUnchanged(t *testing.T) {
	host := newRecHost()
	g := newGuest(&handlers{kind: kindFilter, filterFn: func(r Record) (bool, error) {
		if string(r.Value) == "err" {
			return false, errors.New("cannot decide")
		}
		return r.Key[0] == 'k', nil
	}}, host)
	in := []abi.Record{
		{Key: []byte("k1"), Value: []byte("v1"), Time: -3, Headers: []abi.Header{{Name: []byte("a"), Value: []byte("b")}, {Name: []byte("c")}}},
		{Key: []byte("x"), Value: []byte("v2")},
		{Key: []byte("k3"), Value: []byte("err")},
		{Key: []byte("k4")},
	}
	batch := encode(in...)
	if st := run(g, batch); st != abi.StatusOK {
		t.Fatalf("status %d", st)
	}
	out := host.outputs()
	if len(out) != 2 {
		t.Fatalf("outputs = %+v", out)
	}
	for i, idx := range []int{0, 3} {
		want := in[idx]
		want.Origin = uint32(idx)
		if !bytes.Equal(abi.AppendRecord(nil, &out[i]), abi.AppendRecord(nil, &want)) {
			t.Errorf("output %d = %+v, want input %d unchanged: %+v", i, out[i], idx, want)
		}
	}
	if fmt.Sprint(host.rejects) != "[2:cannot decide]" {
		t.Errorf("rejects = %v", host.rejects)
	}
}

func TestFlatMapDiscardsOutputsOfFailedRecord(t *testing.T) {
	host := newRecHost()
	g := newGuest(&handlers{kind: kindFlatMap, flatMapFn: func(r Record, out *Emitter) error {
		for _, f := range bytes.Fields(r.Value) {
			if string(f) == "fail" {
				return errors.New("fail field")
			}
			out.Emit(Record{Key: r.Key, Value: f})
		}
		return nil
	}}, host)
	if st := run(g, encode(kv("a", "1 2"), kv("b", "3 fail 4"), kv("c", "5"))); st != abi.StatusOK {
		t.Fatalf("status %d", st)
	}
	var got []string
	for _, o := range host.outputs() {
		got = append(got, fmt.Sprintf("%d%s%s", o.Origin, o.Key, o.Value))
	}
	if want := "0a1 0a2 2c5"; strings.Join(got, " ") != want {
		t.Errorf("outputs %v, want %s", got, want)
	}
}

func TestFlushBetweenRecordsPastOneMiB(t *testing.T) {
	host := newRecHost()
	chunk := make([]byte, 1000)
	g := newGuest(&handlers{kind: kindFlatMap, flatMapFn: func(r Record, out *Emitter) error {
		for range 700 { // about 0.7 MiB per input record
			out.Emit(Record{Key: r.Key, Value: chunk})
		}
		if string(r.Value) == "fail" {
			return errors.New("fail")
		}
		return nil
	}}, host)
	// After record 0: 0.7 MiB, no flush. Record 1 fails: discarded. After
	// record 2: 1.4 MiB, flush. Record 3: flushed at the end.
	if st := run(g, encode(kv("a", ""), kv("b", "fail"), kv("c", ""), kv("d", ""))); st != abi.StatusOK {
		t.Fatalf("status %d", st)
	}
	if len(host.emits) != 2 || len(host.emits[0]) != 1400 || len(host.emits[1]) != 700 {
		t.Fatalf("emit calls carried %d batches: %v", len(host.emits), lens(host.emits))
	}
	if host.emits[0][0].Origin != 0 || host.emits[0][700].Origin != 2 || host.emits[1][0].Origin != 3 {
		t.Errorf("origins across the flush are wrong")
	}
}

func lens(b [][]abi.Record) []int {
	var n []int
	for _, x := range b {
		n = append(n, len(x))
	}
	return n
}

func TestKeyedState(t *testing.T) {
	host := newRecHost("counts", "last")
	var keys []string
	g := newGuest(&handlers{kind: kindKeyed, keyedFn: func(r Record, st *State, out *Emitter) error {
		keys = append(keys, string(st.Key()))
		last := st.Table("last")
		switch string(r.Value) {
		case "del":
			st.Delete()
			return nil
		case "missing":
			st.Table("nope")
		}
		prev, _ := last.Get()
		out.Emit(Record{Key: r.Key, Value: prev}) // encoded before the next Get reuses the buffer
		last.Put(r.Value)
		n := 0
		if v, ok := st.Get(); ok {
			n = len(v)
		}
		st.Put(bytes.Repeat([]byte{'+'}, n+1))
		return nil
	}}, host)
	big := strings.Repeat("B", 1000)
	if st := run(g, encode(kv("a", "x"), kv("b", big), kv("a", "y"), kv("b", "z"), kv("b", "del"))); st != abi.StatusOK {
		t.Fatalf("status %d", st)
	}
	if fmt.Sprint(keys) != "[a b a b b]" {
		t.Errorf("State.Key per record = %v", keys)
	}
	if got := host.state[0]["a"]; string(got) != "++" {
		t.Errorf("count a = %q, want ++", got)
	}
	if _, ok := host.state[0]["b"]; ok {
		t.Errorf("count b survived its deletion")
	}
	if got := host.state[1]["b"]; string(got) != "z" {
		t.Errorf("last b = %q", got)
	}
	var prevs []string
	for _, o := range host.outputs() {
		prevs = append(prevs, fmt.Sprintf("%d", len(o.Value)))
	}
	if fmt.Sprint(prevs) != "[0 0 1 1000]" {
		t.Errorf("previous value lengths = %v, want [0 0 1 1000]", prevs)
	}
	if host.tableIDs != 1 {
		t.Errorf("TableID called %d times, want once (cached)", host.tableIDs)
	}
	// The 1000-byte value needed a retry with a bigger buffer; afterwards
	// the buffer is big enough.
	host.gets = 0
	run(g, encode(kv("b", big)))
	if host.gets != 2 {
		t.Errorf("StateGet called %d times for two reads, want 2 (no retry once grown)", host.gets)
	}

	defer func() {
		v := recover()
		if v == nil || !strings.Contains(fmt.Sprint(v), `state table "nope" is not declared`) {
			t.Errorf("recovered %v, want a panic naming the table", v)
		}
	}()
	run(g, encode(kv("a", "missing")))
}

func TestConfigure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fn     func([]byte) error
		config string
		status int32
		log    string
	}{
		{"no handler, null", nil, "null", abi.StatusOK, ""},
		{"no handler, empty", nil, "", abi.StatusOK, ""},
		{"no handler, empty object", nil, " {}\n", abi.StatusOK, ""},
		{"no handler, a config", nil, `{"a":1}`, abi.StatusBadConfig, "takes no configuration"},
		{"handler accepts", func([]byte) error { return nil }, `{"a":1}`, abi.StatusOK, ""},
		{"handler refuses", func([]byte) error { return errors.New(`"a" must be a string`) }, `{"a":1}`, abi.StatusBadConfig, `invalid configuration: "a" must be a string`},
		{"handler, no config", func([]byte) error { return nil }, "", abi.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := newRecHost()
			var got string
			fn := tc.fn
			if fn != nil {
				inner := fn
				fn = func(b []byte) error { got = string(b); return inner(b) }
			}
			g := newGuest(&handlers{kind: kindMap, configure: fn}, host)
			region := g.alloc(int32(len(tc.config)))
			copy(region, tc.config)
			if st := g.configure(region); st != tc.status {
				t.Fatalf("status %d, want %d", st, tc.status)
			}
			want := tc.config
			if want == "" {
				want = "null" // no config reaches the handler as null
			}
			if fn != nil && got != want {
				t.Errorf("handler got %q, want %q", got, want)
			}
			if tc.log == "" && len(host.logs) != 0 || tc.log != "" && (len(host.logs) != 1 || !strings.Contains(host.logs[0], tc.log) || !strings.HasPrefix(host.logs[0], "3:")) {
				t.Errorf("logs = %v, want an error containing %q", host.logs, tc.log)
			}
		})
	}
}

func TestProcessFailures(t *testing.T) {
	t.Run("no handler", func(t *testing.T) {
		host := newRecHost()
		g := newGuest(&handlers{}, host)
		if st := run(g, encode(kv("a", "b"))); st != abi.StatusError {
			t.Fatalf("status %d, want StatusError", st)
		}
		if len(host.logs) != 1 || !strings.Contains(host.logs[0], "no handler registered") {
			t.Errorf("logs = %v", host.logs)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		host := newRecHost()
		calls := 0
		g := newGuest(&handlers{kind: kindMap, mapFn: func(r Record) (Record, error) { calls++; return r, nil }}, host)
		batch := append(encode(kv("a", "b")), 0xff) // a trailing byte
		if st := run(g, batch); st != abi.StatusError {
			t.Fatalf("status %d, want StatusError", st)
		}
		if len(host.logs) != 1 || !strings.Contains(host.logs[0], "1 trailing bytes") || len(host.emits) != 0 {
			t.Errorf("logs %v, %d emits: want the decode error and no output", host.logs, len(host.emits))
		}
		if st := run(g, []byte{1, 0}); st != abi.StatusError {
			t.Fatalf("short batch: status %d", st)
		}
	})
}

func TestAlloc(t *testing.T) {
	g := newGuest(&handlers{kind: kindMap, mapFn: func(r Record) (Record, error) { return r, nil }}, newRecHost())
	if g.alloc(-1) != nil || g.alloc(maxAlloc+1) != nil {
		t.Error("out-of-range sizes must fail")
	}
	z := g.alloc(0)
	if z == nil || cap(z) == 0 {
		t.Fatal("alloc(0) must return a region with an address")
	}
	g.consumed()
	a := g.alloc(100)
	b := g.alloc(100) // before a is consumed: must not overlap
	for i := range a {
		a[i] = 1
	}
	for i := range b {
		b[i] = 2
	}
	if a[0] != 1 || len(a) != 100 || len(b) != 100 {
		t.Error("two pending regions overlap")
	}
	g.process(encode())
	c := g.alloc(50)
	if &c[0] != &a[0] {
		t.Error("after a consuming call the input region should be reused")
	}
}

func TestRegistration(t *testing.T) {
	saved := registered
	defer func() { registered = saved }()
	registered = handlers{}

	mustPanic := func(what, want string, fn func()) {
		t.Helper()
		defer func() {
			if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), want) {
				t.Errorf("%s: recovered %v, want a panic containing %q", what, v, want)
			}
		}()
		fn()
	}
	Keyed(func(Record, *State, *Emitter) error { return nil })
	if registered.kind != kindKeyed {
		t.Fatalf("kind = %v", registered.kind)
	}
	mustPanic("second handler", "a Keyed handler is already registered", func() { Map(func(r Record) (Record, error) { return r, nil }) })
	mustPanic("second handler, in place", "MapInPlace called, but a Keyed handler", func() { MapInPlace(func(*Record) error { return nil }) })
	mustPanic("nil, in place", "MapInPlace called with a nil function", func() { MapInPlace(nil) })
	mustPanic("nil", "nil function", func() { Filter(nil) })
	Configure(func([]byte) error { return nil })
	mustPanic("second Configure", "Configure called twice", func() { Configure(func([]byte) error { return nil }) })
	registered.sealed = true
	registered.kind = kindNone
	mustPanic("after start", "after the operator started", func() { FlatMap(func(Record, *Emitter) error { return nil }) })
}

func TestRecordHeaders(t *testing.T) {
	shared := make([]Header, 1, 4)
	shared[0] = Header{Name: []byte("a"), Value: []byte("1")}
	r1 := Record{Headers: shared[:1:1]}
	r2 := Record{Headers: shared[:1]}
	r1.SetHeader("b", []byte("x"))
	r2.SetHeader("b", []byte("y"))
	if v, _ := r1.Header("b"); string(v) != "x" {
		t.Errorf("r1 header b = %q: overwritten through a shared array", v)
	}
	r1.SetHeader("a", []byte("2"))
	if v, ok := r1.Header("a"); !ok || string(v) != "2" || len(r1.Headers) != 2 {
		t.Errorf("replacing a header: %q %v, %d headers", v, ok, len(r1.Headers))
	}
	if _, ok := r1.Header("A"); ok {
		t.Error("header names are case-sensitive")
	}
	c := r1.Clone()
	r1.Headers[0].Value[0] = '9'
	if v, _ := c.Header("a"); string(v) != "2" {
		t.Error("Clone shares bytes with the original")
	}
}

func TestMisuseOutsideHandlers(t *testing.T) {
	for name, fn := range map[string]func(){
		"Emit":  func() { new(Emitter).Emit(Record{}) },
		"Get":   func() { new(State).Get() },
		"Table": func() { new(State).Table("x") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on a zero value did not panic", name)
				}
			}()
			fn()
		}()
	}
}

// TestNoAllocationPerRecord checks the promise that every handler over
// small records allocates nothing in the SDK once warmed up.
func TestNoAllocationPerRecord(t *testing.T) {
	for _, name := range benchHandlers {
		g, batch := benchGuest(name, 256)
		run(g, batch)
		if n := testing.AllocsPerRun(20, func() { run(g, batch) }); n != 0 {
			t.Errorf("%s: %.1f allocations per batch, want 0", name, n)
		}
	}
}

// withOrigins returns copies of recs whose Origin is their index, as the
// outputs of a map that changes nothing.
func withOrigins(recs []abi.Record) []abi.Record {
	out := make([]abi.Record, len(recs))
	for i, r := range recs {
		r.Origin = uint32(i)
		r.Input = 0 // the host ignores an output's input
		out[i] = r
	}
	return out
}

// sameRecords reports whether a and b encode alike, record for record.
func sameRecords(a, b []abi.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(abi.AppendRecord(nil, &a[i]), abi.AppendRecord(nil, &b[i])) {
			return false
		}
	}
	return true
}

func TestMapInPlace(t *testing.T) {
	host := newRecHost()
	g := newGuest(&handlers{kind: kindMap, mapInPlaceFn: func(r *Record) error {
		switch string(r.Value) {
		case "bad":
			return errors.New("bad value")
		case "key":
			r.Key = []byte("new key")
		case "time":
			r.Time++
		case "header":
			r.Headers[1].Value = []byte("changed") // in the decoded header list
		case "set-header":
			r.SetHeader("added", []byte("1"))
		case "no-headers":
			r.Headers = nil
		case "shorter":
			r.Value = r.Value[:3]
		}
		copy(r.Value, bytes.ToUpper(r.Value)) // in place: still forwarded
		return nil
	}}, host)
	hdrs := []abi.Header{{Name: []byte("a"), Value: []byte("1")}, {Name: []byte("b")}}
	in := []abi.Record{
		{Key: []byte("k"), Value: []byte("abc"), Time: 1},
		{Key: []byte("k"), Value: []byte("key"), Time: 2},
		{Value: []byte("time"), Time: 3},
		{Key: []byte("k"), Value: []byte("bad")},
		{Value: []byte("header"), Headers: hdrs},
		{Value: []byte("set-header"), Headers: hdrs},
		{Value: []byte("no-headers"), Headers: hdrs},
		{Value: []byte("kept"), Headers: hdrs},
		{Value: []byte("shorter")},
		{},
		{Key: []byte("last")},
	}
	if st := run(g, encode(in...)); st != abi.StatusOK {
		t.Fatalf("status %d, logs %v", st, host.logs)
	}
	up := func(r abi.Record, origin uint32) abi.Record {
		r.Origin, r.Value = origin, bytes.ToUpper(r.Value)
		return r
	}
	want := []abi.Record{
		up(in[0], 0),
		{Origin: 1, Key: []byte("new key"), Value: []byte("KEY"), Time: 2},
		{Origin: 2, Value: []byte("TIME"), Time: 4},
		{Origin: 4, Value: []byte("HEADER"), Headers: []abi.Header{hdrs[0], {Name: []byte("b"), Value: []byte("changed")}}},
		{Origin: 5, Value: []byte("SET-HEADER"), Headers: append(append([]abi.Header(nil), hdrs...), abi.Header{Name: []byte("added"), Value: []byte("1")})},
		{Origin: 6, Value: []byte("NO-HEADERS")},
		up(in[7], 7),
		{Origin: 8, Value: []byte("SHO")},
		up(in[9], 9),
		up(in[10], 10),
	}
	if got := host.outputs(); !sameRecords(got, want) {
		t.Errorf("outputs\n got %+v\nwant %+v", got, want)
	}
	if len(host.emits) != 1 || fmt.Sprint(host.rejects) != "[3:bad value]" {
		t.Errorf("%d emit calls, rejects %v: want one call and record 3 rejected", len(host.emits), host.rejects)
	}
}

// TestForwardedBatchIsEmittedInPlace: when every output is its input
// record, the input batch itself is handed to the host, origins set.
func TestForwardedBatchIsEmittedInPlace(t *testing.T) {
	for name, h := range map[string]*handlers{
		"MapInPlace": {kind: kindMap, mapInPlaceFn: func(r *Record) error {
			copy(r.Value, bytes.ToUpper(r.Value))
			return nil
		}},
		"Map": {kind: kindMap, mapFn: func(r Record) (Record, error) {
			copy(r.Value, bytes.ToUpper(r.Value))
			return r, nil
		}},
		"Filter": {kind: kindFilter, filterFn: func(r Record) (bool, error) {
			copy(r.Value, bytes.ToUpper(r.Value))
			return true, nil
		}},
	} {
		t.Run(name, func(t *testing.T) {
			host := newRecHost()
			g := newGuest(h, host)
			in := []abi.Record{kv("a", "x"), {Value: []byte("y"), Headers: []abi.Header{{Name: []byte("h"), Value: []byte("v")}}}, kv("", "")}
			batch := encode(in...)
			for i := range in {
				in[i].Value = bytes.ToUpper(in[i].Value)
			}
			// Origins that are not the records' indexes are corrected.
			binary.LittleEndian.PutUint32(batch[4+4:], 7)
			region := g.alloc(int32(len(batch)))
			copy(region, batch)
			if st := g.process(region); st != abi.StatusOK {
				t.Fatalf("status %d", st)
			}
			if len(host.raw) != 1 || unsafe.SliceData(host.raw[0]) != unsafe.SliceData(region) || len(host.raw[0]) != len(region) {
				t.Fatalf("emit calls %d: want one, of the input region itself", len(host.raw))
			}
			if got := host.outputs(); !sameRecords(got, withOrigins(in)) {
				t.Errorf("outputs %+v", got)
			}
		})
	}
}

// TestRunsOfForwardedRecords mixes forwarded records with encoded, dropped
// and rejected ones, with runs big enough to be flushed on their own.
func TestRunsOfForwardedRecords(t *testing.T) {
	big := strings.Repeat("v", 400<<10)
	host := newRecHost()
	g := newGuest(&handlers{kind: kindMap, mapFn: func(r Record) (Record, error) {
		switch string(r.Key) {
		case "change":
			return Record{Key: r.Key, Value: []byte("changed")}, nil
		case "reject":
			return r, errors.New("rejected")
		}
		return r, nil
	}}, host)
	keys := []string{"f0", "f1", "f2", "change", "f4", "reject", "reject", "f7", "f8", "change", "f10"}
	in := make([]abi.Record, len(keys))
	var want []abi.Record
	for i, k := range keys {
		in[i] = abi.Record{Key: []byte(k), Value: []byte(big), Time: int64(i)}
		switch k {
		case "change":
			want = append(want, abi.Record{Origin: uint32(i), Key: []byte(k), Value: []byte("changed")})
		case "reject":
		default:
			r := in[i]
			r.Origin = uint32(i)
			want = append(want, r)
		}
	}
	if st := run(g, encode(in...)); st != abi.StatusOK {
		t.Fatalf("status %d, logs %v", st, host.logs)
	}
	if got := host.outputs(); !sameRecords(got, want) {
		t.Fatalf("outputs differ: got %d records, want %d", len(got), len(want))
	}
	// A run joins the outputs when a record ends it, and the outputs are
	// flushed then once past 1 MiB: records 0-2 (1.2 MiB) before record 3
	// is encoded, records 3, 4, 7 and 8 before record 9 is, 9 and 10 at
	// the end.
	if fmt.Sprint(lens(host.emits)) != "[3 4 2]" {
		t.Errorf("records per emit call %v, want [3 4 2]", lens(host.emits))
	}
	if fmt.Sprint(host.rejects) != "[5:rejected 6:rejected]" {
		t.Errorf("rejects %v", host.rejects)
	}
}

// FuzzProcess: on any input, the run loops accept exactly what abi.Decoder
// accepts, and a map or flatmap that returns its input outputs the input.
func FuzzProcess(f *testing.F) {
	r := abi.Record{Key: []byte("key"), Value: []byte("value"), Time: 5, Headers: []abi.Header{{Name: []byte("a"), Value: []byte("b")}}}
	f.Add(encode(r, abi.Record{}, r))
	f.Add(encode())
	f.Add([]byte{2, 0, 0, 0, 32, 0, 0, 0})
	f.Add(encode(abi.Record{Input: 1, Key: []byte("k")}, abi.Record{Input: 0xffff}))
	kinds := map[string]*handlers{
		"MapInPlace": {kind: kindMap, mapInPlaceFn: func(*Record) error { return nil }},
		"Map":        {kind: kindMap, mapFn: func(r Record) (Record, error) { return r, nil }},
		"Filter":     {kind: kindFilter, filterFn: func(Record) (bool, error) { return true, nil }},
		"FlatMap":    {kind: kindFlatMap, flatMapFn: func(r Record, out *Emitter) error { out.Emit(r); return nil }},
	}
	f.Fuzz(func(t *testing.T, batch []byte) {
		want, err := abiDecodeAll(batch)
		for name, h := range kinds {
			host := newRecHost()
			g := newGuest(h, host)
			st := run(g, batch)
			if (st == abi.StatusOK) != (err == nil) {
				t.Fatalf("%s: status %d, abi.Decoder error %v, batch %x", name, st, err, batch)
			}
			if err == nil && !sameRecords(host.outputs(), withOrigins(want)) {
				t.Fatalf("%s: outputs %+v, want the inputs %+v", name, host.outputs(), want)
			}
			if err != nil && (len(host.logs) != 1 || !strings.Contains(host.logs[0], err.Error())) {
				t.Fatalf("%s: logs %v, want abi.Decoder's error %v", name, host.logs, err)
			}
		}
	})
}

// sluice_kinds reports the kind of the registered handler, the one
// `sluice plugin build` writes into the module's sluice.kinds section, and
// no kind, with the reason logged, when none is registered.
func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		h    handlers
		want int32
	}{
		{handlers{kind: kindMap}, abi.KindBitMap},
		{handlers{kind: kindFilter}, abi.KindBitFilter},
		{handlers{kind: kindFlatMap}, abi.KindBitFlatMap},
		{handlers{kind: kindKeyed}, abi.KindBitKeyed},
		{handlers{kind: kindTxn}, abi.KindBitTransactional},
	} {
		host := newRecHost()
		if got := newGuest(&tc.h, host).kinds(); got != tc.want || len(host.logs) != 0 {
			t.Errorf("%s handler: kinds %#x, logs %v; want %#x and no log", tc.h.kind, got, host.logs, tc.want)
		}
	}
	host := newRecHost()
	if got := newGuest(&handlers{}, host).kinds(); got != 0 || len(host.logs) != 1 || !strings.Contains(host.logs[0], "3:no handler registered") {
		t.Errorf("no handler: kinds %#x, logs %v; want 0 and the error logged", got, host.logs)
	}
}

// Every kind of handler sees the input each record arrived on, which the
// host encodes in the record's flags because the SDK declares
// abi.FeatureInputs; outputs carry no input of their own.
func TestInputs(t *testing.T) {
	if got := newGuest(&handlers{}, newRecHost()).features(); got != abi.FeatureInputs {
		t.Fatalf("features %#x, want abi.FeatureInputs", got)
	}
	var seen []int
	see := func(r Record) { seen = append(seen, r.Input) }
	kinds := map[string]*handlers{
		"MapInPlace": {kind: kindMap, mapInPlaceFn: func(r *Record) error { see(*r); return nil }},
		"Map":        {kind: kindMap, mapFn: func(r Record) (Record, error) { see(r); return Record{Key: r.Key, Input: 7}, nil }},
		"Filter":     {kind: kindFilter, filterFn: func(r Record) (bool, error) { see(r); return true, nil }},
		"FlatMap":    {kind: kindFlatMap, flatMapFn: func(r Record, out *Emitter) error { see(r); out.Emit(r); return nil }},
		"Keyed":      {kind: kindKeyed, keyedFn: func(r Record, _ *State, out *Emitter) error { see(r); out.Emit(r); return nil }},
	}
	for name, h := range kinds {
		seen = nil
		host := newRecHost()
		batch := encode(abi.Record{Key: []byte("a"), Input: 1}, abi.Record{Key: []byte("b")}, abi.Record{Key: []byte("c"), Input: 0xffff})
		if st := run(newGuest(h, host), batch); st != abi.StatusOK {
			t.Fatalf("%s: status %d, logs %v", name, st, host.logs)
		}
		if want := []int{1, 0, 0xffff}; !slices.Equal(seen, want) {
			t.Errorf("%s: handler saw inputs %v, want %v", name, seen, want)
		}
		if outs := host.outputs(); len(outs) != 3 {
			t.Errorf("%s: %d outputs, want 3", name, len(outs))
		}
	}

	// A flag bit beside the input's is refused, as abi.Decoder refuses it.
	bad := encode(abi.Record{Key: []byte("a")})
	binary.LittleEndian.PutUint32(bad[4+8:], 0x10000)
	for name, h := range kinds {
		host := newRecHost()
		if st := run(newGuest(h, host), bad); st != abi.StatusError || len(host.logs) != 1 || !strings.Contains(host.logs[0], "reserved flags are 0x10000, want 0 beside the input bits 0xffff") {
			t.Errorf("%s: flags 0x10000: status %d, logs %v; want the batch refused", name, st, host.logs)
		}
	}
}
