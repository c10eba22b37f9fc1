//go:build !wasip1

package sluice

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

// txnHost is a recHost with the transactional host functions: it keeps a
// copy of every txn_plan call, serves txn_get from values (keyed
// "table/key"), refuses any access to a key starting with "undeclared",
// and records puts and deletes.
type txnHost struct {
	*recHost
	plans  [][]byte
	values map[string][]byte
	writes []string
}

func newTxnHost(tables ...string) *txnHost {
	return &txnHost{recHost: newRecHost(tables...), values: map[string][]byte{}}
}

func (h *txnHost) TxnPlan(decls []byte) { h.plans = append(h.plans, bytes.Clone(decls)) }

func (h *txnHost) TxnGet(table int32, key, buf []byte) int32 {
	if bytes.HasPrefix(key, []byte("undeclared")) {
		return abi.StatusUndeclared
	}
	v, ok := h.values[fmt.Sprintf("%d/%s", table, key)]
	if !ok {
		return abi.StatusNotFound
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func (h *txnHost) TxnPut(table int32, key, value []byte) int32 {
	if bytes.HasPrefix(key, []byte("undeclared")) {
		return abi.StatusUndeclared
	}
	h.writes = append(h.writes, fmt.Sprintf("put %d/%s=%s", table, key, value))
	return abi.StatusOK
}

func (h *txnHost) TxnDelete(table int32, key []byte) int32 {
	if bytes.HasPrefix(key, []byte("undeclared")) {
		return abi.StatusUndeclared
	}
	h.writes = append(h.writes, fmt.Sprintf("delete %d/%s", table, key))
	return abi.StatusOK
}

// decls decodes every declaration the host received, copied.
func (h *txnHost) decls(t *testing.T) []abi.OpDecl {
	t.Helper()
	var all []abi.OpDecl
	var d abi.PlanDecoder
	for _, p := range h.plans {
		d.Reset(p)
		var o abi.OpDecl
		for d.Next(&o) {
			c := abi.OpDecl{Event: o.Event, Fn: o.Fn, Flags: o.Flags, Table: o.Table, Key: bytes.Clone(o.Key), Arg: bytes.Clone(o.Arg)}
			for _, r := range o.Reads {
				c.Reads = append(c.Reads, abi.TableKey{Table: r.Table, Key: bytes.Clone(r.Key)})
			}
			all = append(all, c)
		}
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

func keep(*Call) Effect { return Keep() }

func txnGuest(op *Txn, host *txnHost) *guest {
	return newGuest(&handlers{kind: kindTxn, name: "Transactional", txn: op}, host)
}

// runPlan calls sluice_plan as the host does: through an allocated region.
func runPlan(g *guest, batch []byte) int32 {
	region := g.alloc(int32(len(batch)))
	copy(region, batch)
	return g.plan(region)
}

func TestPlanEncodesDeclarations(t *testing.T) {
	host := newTxnHost()
	// Keys built in a buffer reused from call to call: the planner must
	// copy them.
	var kb []byte
	op := &Txn{Funcs: []TxnFunc{keep, keep, keep}, Plan: func(ev Record, p *Planner) error {
		switch string(ev.Value) {
		case "none":
		case "nd":
			kb = append(kb[:0], "scope-read"...)
			p.NonDet(2, 1, ev.Key, Key{Table: 0, Key: kb})
		default:
			kb = append(kb[:0], ev.Key...)
			p.Write(1, kb, 2, ev.Value, Key{Table: 0, Key: []byte("r1")}, Key{Table: 2, Key: []byte("r2")})
			kb = append(kb[:0], "other"...)
			p.Write(0, kb, 0, nil)
		}
		return nil
	}}
	g := txnGuest(op, host)
	if st := runPlan(g, encode(kv("a", "x"), kv("b", "none"), kv("c", "nd"), kv("d", "y"))); st != abi.StatusOK {
		t.Fatalf("status %d, logs %v", st, host.logs)
	}
	if len(host.plans) != 1 {
		t.Fatalf("%d txn_plan calls, want one per batch", len(host.plans))
	}
	r12 := []abi.TableKey{{Table: 0, Key: []byte("r1")}, {Table: 2, Key: []byte("r2")}}
	want := []abi.OpDecl{
		{Event: 0, Fn: 2, Table: 1, Key: []byte("a"), Reads: r12, Arg: []byte("x")},
		{Event: 0, Fn: 0, Table: 0, Key: []byte("other")},
		{Event: 2, Fn: 1, Flags: abi.OpFlagNonDet, Table: 2, Reads: []abi.TableKey{{Table: 0, Key: []byte("scope-read")}}, Arg: []byte("c")},
		{Event: 3, Fn: 2, Table: 1, Key: []byte("d"), Reads: r12, Arg: []byte("y")},
		{Event: 3, Fn: 0, Table: 0, Key: []byte("other")},
	}
	if got := host.decls(t); !reflect.DeepEqual(got, want) {
		t.Errorf("declarations\n got %+v\nwant %+v", got, want)
	}

	// An empty batch makes no txn_plan call.
	host.plans = nil
	if st := runPlan(g, encode()); st != abi.StatusOK || len(host.plans) != 0 {
		t.Errorf("empty batch: status %d, %d txn_plan calls", st, len(host.plans))
	}
}

func TestPlanFlushesPastOneMiB(t *testing.T) {
	host := newTxnHost()
	arg := make([]byte, 300<<10)
	op := &Txn{Funcs: []TxnFunc{keep}, Plan: func(ev Record, p *Planner) error {
		p.Write(0, ev.Key, 0, arg)
		return nil
	}}
	g := txnGuest(op, host)
	var evs []abi.Record
	for i := range 8 {
		evs = append(evs, kv(fmt.Sprint(i), ""))
	}
	if st := runPlan(g, encode(evs...)); st != abi.StatusOK {
		t.Fatalf("status %d", st)
	}
	// Four declarations pass 1 MiB: calls after events 3 and 7.
	if len(host.plans) != 2 {
		t.Fatalf("%d txn_plan calls, want 2", len(host.plans))
	}
	for i, d := range host.decls(t) {
		if d.Event != uint32(i) || string(d.Key) != fmt.Sprint(i) || len(d.Arg) != len(arg) {
			t.Errorf("declaration %d: event %d key %q", i, d.Event, d.Key)
		}
	}
}

func TestPlanFailures(t *testing.T) {
	var kept *Planner
	op := &Txn{Funcs: []TxnFunc{keep, keep}, Plan: func(ev Record, p *Planner) error {
		kept = p
		switch string(ev.Value) {
		case "err":
			return errors.New("cannot plan this")
		case "fn":
			p.Write(0, ev.Key, 2, nil)
		case "neg":
			p.NonDet(0, -1, nil)
		default:
			p.Write(0, ev.Key, 1, nil)
		}
		return nil
	}}
	for _, c := range []struct{ value, log string }{
		{"err", "plan: event 1: cannot plan this"},
		{"fn", "plan: event 1: operation names function 2, but the operator has 2 functions (Txn.Funcs)"},
		{"neg", "plan: event 1: operation names function -1, but the operator has 2 functions (Txn.Funcs)"},
	} {
		host := newTxnHost()
		g := txnGuest(op, host)
		if st := runPlan(g, encode(kv("a", "ok"), kv("b", c.value), kv("c", "ok"))); st != abi.StatusError {
			t.Errorf("%s: status %d, want StatusError", c.value, st)
		}
		if want := fmt.Sprintf("%d:%s", abi.LogError, c.log); len(host.logs) != 1 || host.logs[0] != want {
			t.Errorf("%s: logs %q, want %q", c.value, host.logs, want)
		}
	}

	// The Planner is valid only during Plan.
	func() {
		defer func() {
			if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "outside the Plan call") {
				t.Errorf("panic %v", v)
			}
		}()
		kept.Write(0, nil, 0, nil)
	}()

	// A malformed batch.
	host := newTxnHost()
	g := txnGuest(op, host)
	batch := encode(kv("a", "ok"))
	if st := runPlan(g, batch[:len(batch)-1]); st != abi.StatusError || len(host.logs) != 1 || !strings.Contains(host.logs[0], "input batch") {
		t.Errorf("truncated batch: status %d, logs %q", st, host.logs)
	}
}

func TestTxnExportsNeedTransactional(t *testing.T) {
	host := newTxnHost()
	g := newGuest(&handlers{kind: kindMap, name: "Map", mapFn: func(r Record) (Record, error) { return r, nil }}, host)
	if st := runPlan(g, encode()); st != abi.StatusError || !strings.Contains(host.logs[0], "registers a Map handler, not a Transactional one") {
		t.Errorf("plan on a Map: status %d, logs %q", st, host.logs)
	}
	host.logs = nil
	if st := g.apply(abi.AppendApplyRequest(nil, &abi.ApplyRequest{})); st != abi.StatusError || len(host.logs) != 1 {
		t.Errorf("apply on a Map: status %d, logs %q", st, host.logs)
	}
	host.logs = nil
	if st := g.post(encode(), abi.AppendOutcomesHeader(nil, 0)); st != abi.StatusError || len(host.logs) != 1 {
		t.Errorf("post on a Map: status %d, logs %q", st, host.logs)
	}
	host.logs = nil
	g = newGuest(&handlers{}, host)
	if st := runPlan(g, encode()); st != abi.StatusError || !strings.Contains(host.logs[0], "sluice.Transactional") {
		t.Errorf("plan without a handler: status %d, logs %q", st, host.logs)
	}
	host.logs = nil
	g = txnGuest(&Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{keep}}, host)
	if st := run(g, encode(kv("a", "b"))); st != abi.StatusError || !strings.Contains(host.logs[0], "serves transactional operators") {
		t.Errorf("process on a Transactional: status %d, logs %q", st, host.logs)
	}
}

func TestTransactionalRegistration(t *testing.T) {
	defer func() { registered = handlers{} }()
	plan := func(Record, *Planner) error { return nil }
	funcs := []TxnFunc{keep}
	Transactional(Txn{Plan: plan, Funcs: funcs})
	funcs[0] = nil // registration copied the slice
	if registered.kind != kindTxn || registered.txn.Funcs[0] == nil {
		t.Fatalf("registered %v, funcs %v", registered.kind, registered.txn.Funcs)
	}
	for _, c := range []struct {
		op   Txn
		want string
	}{
		{Txn{Plan: plan, Funcs: []TxnFunc{keep}}, "a Transactional handler is already registered"},
		{Txn{Funcs: []TxnFunc{keep}}, "Txn.Plan is nil"},
		{Txn{Plan: plan}, "Txn.Funcs is empty"},
		{Txn{Plan: plan, Funcs: []TxnFunc{keep, nil}}, "Txn.Funcs[1] is nil"},
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), c.want) {
					t.Errorf("panic %v, want %q", v, c.want)
				}
			}()
			Transactional(c.op)
		}()
	}
}

// request encodes an apply request as the host does.
func request(q *abi.ApplyRequest) []byte { return abi.AppendApplyRequest(nil, q) }

// written returns the value an ApplyWrite stored: natively its address is
// not in the result slot (address is 0), but its length is, and
// guest.written holds the pointer.
func written(g *guest, req []byte) []byte {
	if binary.LittleEndian.Uint32(req) != 0 {
		panic("result slot holds an address natively")
	}
	return bytes.Clone(unsafeBytes(g.written, binary.LittleEndian.Uint32(req[4:])))
}

func unsafeBytes(p *byte, n uint32) []byte { return unsafe.Slice(p, n) }

func TestApplyCallAndEffects(t *testing.T) {
	host := newTxnHost()
	var seen string
	op := &Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{
		func(c *Call) Effect { // 0: describe the call, write own+arg
			own, found := c.Own()
			r0, f0 := c.Read(0)
			r1, f1 := c.Read(1)
			seen = fmt.Sprintf("event %d op %d fn %d table %d key %s nondet %t own %s/%t reads %d: %s/%t %s/%t arg %s",
				c.Event(), c.Op(), c.Fn(), c.Table(), c.Key(), c.NonDet(), own, found, c.Reads(), r0, f0, r1, f1, c.Arg())
			v := c.Scratch(len(own) + len(c.Arg()))
			copy(v[copy(v, own):], c.Arg())
			return Write(v)
		},
		func(*Call) Effect { return Delete() },
		func(*Call) Effect { return Abort() },
		func(*Call) Effect { return Keep() },
		func(*Call) Effect { return Fail(errors.New("value is corrupt")) },
		func(c *Call) Effect { c.Read(5); return Write(nil) }, // 5: read out of range, ignored
		func(*Call) Effect { return Effect{} },                // 6: the zero Effect
	}}
	g := txnGuest(op, host)
	req := request(&abi.ApplyRequest{Fn: 0, Event: 7, Op: 2, Table: 1, Key: []byte("k"), Own: abi.Value{Found: true, Bytes: []byte("old")},
		Reads: []abi.ReadValue{{TableKey: abi.TableKey{Table: 0, Key: []byte("r")}, Value: abi.Value{Found: true, Bytes: []byte("rv")}}, {TableKey: abi.TableKey{Table: 2, Key: []byte("s")}}},
		Arg:   []byte("+arg")})
	if st := g.apply(req); st != abi.ApplyWrite {
		t.Fatalf("status %d, logs %q", st, host.logs)
	}
	if want := "event 7 op 2 fn 0 table 1 key k nondet false own old/true reads 2: rv/true /false arg +arg"; seen != want {
		t.Errorf("the function saw\n%s\nwant\n%s", seen, want)
	}
	if v := written(g, req); string(v) != "old+arg" {
		t.Errorf("written %q", v)
	}

	for fn, want := range map[uint32]int32{1: abi.ApplyDelete, 2: abi.ApplyAbort, 3: abi.ApplyKeep, 6: abi.ApplyWrite} {
		req := request(&abi.ApplyRequest{Fn: fn, Flags: abi.OpFlagNonDet})
		if st := g.apply(req); st != want {
			t.Errorf("function %d: status %d, want %d", fn, st, want)
		}
		if fn == 6 && len(written(g, req)) != 0 {
			t.Errorf("the zero Effect wrote %q", written(g, req))
		}
	}
	if len(host.logs) != 0 {
		t.Fatalf("logs %q", host.logs)
	}

	for _, c := range []struct {
		req abi.ApplyRequest
		log string
	}{
		{abi.ApplyRequest{Fn: 4, Event: 3, Op: 1}, "apply: event 3 operation 1: function 4 failed: value is corrupt"},
		{abi.ApplyRequest{Fn: 5, Event: 3}, "apply: event 3 operation 0: function 5 failed: sluice: state access outside the operation's declaration: read index 5 of 0 declared reads"},
		{abi.ApplyRequest{Fn: 9, Event: 4, Op: 2}, "apply: event 4 operation 2 names function 9, but the operator has 7 functions (Txn.Funcs)"},
	} {
		host.logs = nil
		if st := g.apply(request(&c.req)); st != abi.StatusError {
			t.Errorf("function %d: status %d, want StatusError", c.req.Fn, st)
		}
		if want := fmt.Sprintf("%d:%s", abi.LogError, c.log); len(host.logs) != 1 || host.logs[0] != want {
			t.Errorf("logs %q, want %q", host.logs, want)
		}
	}

	host.logs = nil
	bad := request(&abi.ApplyRequest{Fn: 0})
	if st := g.apply(bad[:len(bad)-1]); st != abi.StatusError || len(host.logs) != 1 || !strings.Contains(host.logs[0], "malformed apply request") {
		t.Errorf("truncated request: status %d, logs %q", st, host.logs)
	}
}

func TestApplyStateAccess(t *testing.T) {
	host := newTxnHost()
	host.values["1/small"] = []byte("v")
	host.values["1/large"] = bytes.Repeat([]byte("L"), 3*initialScratch)
	var got []string
	var errs []error
	op := &Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{
		func(c *Call) Effect {
			got, errs = nil, nil
			for _, k := range []string{"small", "missing", "large", "large", "undeclared-get"} {
				v, ok, err := c.Get(1, []byte(k))
				got = append(got, fmt.Sprintf("%s:%d/%t", k, len(v), ok))
				errs = append(errs, err)
			}
			errs = append(errs, c.Put(1, []byte("p"), []byte("pv")), c.Delete(1, []byte("d")),
				c.Put(1, []byte("undeclared-put"), nil), c.Delete(1, []byte("undeclared-del")))
			return Keep()
		},
		func(c *Call) Effect {
			if _, _, err := c.Get(1, []byte("small")); err != nil {
				return Fail(err)
			}
			return Keep()
		},
	}}
	g := txnGuest(op, host)
	// The host refused accesses: the operation fails although the
	// function returned Keep.
	if st := g.apply(request(&abi.ApplyRequest{Fn: 0, Flags: abi.OpFlagNonDet, Table: 1})); st != abi.StatusError {
		t.Errorf("status %d, want StatusError", st)
	}
	if want := "small:1/true missing:0/false large:768/true large:768/true undeclared-get:0/false"; strings.Join(got, " ") != want {
		t.Errorf("gets %s, want %s", strings.Join(got, " "), want)
	}
	for i, err := range errs {
		if refused := i == 4 || i >= 7; refused != errors.Is(err, ErrUndeclared) {
			t.Errorf("access %d: error %v", i, err)
		}
	}
	if want := `1 3:apply: event 0 operation 0: function 0 failed: sluice: state access outside the operation's declaration: get of table 1 key "undeclared-get"`; fmt.Sprint(len(host.logs), " ", host.logs[0]) != want {
		t.Errorf("logs %q", host.logs)
	}
	if want := "put 1/p=pv delete 1/d"; strings.Join(host.writes, " ") != want {
		t.Errorf("writes %q, want %s", host.writes, want)
	}
	// The refusal does not outlive its call.
	if st := g.apply(request(&abi.ApplyRequest{Fn: 1})); st != abi.ApplyKeep {
		t.Errorf("next call: status %d, logs %q", st, host.logs)
	}
}

// creditRequest is a ledger-like request: an 8-byte own balance, one
// declared read and an 8-byte amount.
func creditRequest() []byte {
	return request(&abi.ApplyRequest{Fn: 0, Event: 1, Op: 1, Table: 0, Key: []byte("acct0001"),
		Own:   abi.Value{Found: true, Bytes: binary.LittleEndian.AppendUint64(nil, 100)},
		Reads: []abi.ReadValue{{TableKey: abi.TableKey{Key: []byte("acct0002")}, Value: abi.Value{Found: true, Bytes: binary.LittleEndian.AppendUint64(nil, 50)}}},
		Arg:   binary.LittleEndian.AppendUint64(nil, 7)})
}

// credit adds the amount to the own balance if the read balance covers it.
func credit(c *Call) Effect {
	own, _ := c.Own()
	src, _ := c.Read(0)
	amt := binary.LittleEndian.Uint64(c.Arg())
	if binary.LittleEndian.Uint64(src) < amt {
		return Abort()
	}
	v := c.Scratch(8)
	binary.LittleEndian.PutUint64(v, binary.LittleEndian.Uint64(own)+amt)
	return Write(v)
}

func TestApplyAllocatesNothing(t *testing.T) {
	host := newTxnHost()
	g := txnGuest(&Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{credit}}, host)
	req := creditRequest()
	g.apply(req)
	if v := binary.LittleEndian.Uint64(written(g, req)); v != 107 {
		t.Fatalf("written %d", v)
	}
	if n := testing.AllocsPerRun(100, func() { g.apply(req) }); n != 0 {
		t.Errorf("%v allocations per apply, want 0", n)
	}
}

func BenchmarkApply(b *testing.B) {
	g := txnGuest(&Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{credit}}, newTxnHost())
	req := creditRequest()
	for b.Loop() {
		if g.apply(req) != abi.ApplyWrite {
			b.Fatal("apply failed")
		}
	}
}

func BenchmarkPlan(b *testing.B) {
	host := newTxnHost()
	amount := binary.LittleEndian.AppendUint64(nil, 7)
	g := txnGuest(&Txn{Funcs: []TxnFunc{credit}, Plan: func(ev Record, p *Planner) error {
		src := Key{Table: 0, Key: ev.Key}
		p.Write(1, ev.Value, 0, amount, src)
		p.Write(0, ev.Key, 0, amount)
		return nil
	}}, host)
	const n = 1024
	var evs []abi.Record
	for i := range n {
		evs = append(evs, kv(fmt.Sprintf("acct%04d", i), fmt.Sprintf("book%04d", i)))
	}
	batch := encode(evs...)
	for b.Loop() {
		host.plans = host.plans[:0]
		if runPlan(g, batch) != abi.StatusOK {
			b.Fatal("plan failed")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// outcomes encodes outcomes as the host does.
func outcomes(events ...abi.EventOutcome) []byte {
	b := abi.AppendOutcomesHeader(nil, uint32(len(events)))
	for i := range events {
		b = abi.AppendEventOutcome(b, &events[i])
	}
	return b
}

// runPost calls sluice_post as the host does, through two regions.
func runPost(g *guest, events, outs []byte) int32 {
	r1 := g.alloc(int32(len(events)))
	copy(r1, events)
	r2 := g.alloc(int32(len(outs)))
	copy(r2, outs)
	return g.post(r1, r2)
}

func TestPost(t *testing.T) {
	host := newTxnHost()
	op := &Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{keep}, Post: func(ev Record, o *Outcome, out *Emitter) error {
		v := fmt.Sprintf("committed=%t", o.Committed)
		for _, op := range o.Ops {
			v += fmt.Sprintf(" [%t own=%s/%t", op.Executed, op.Own.Bytes, op.Own.Found)
			for _, r := range op.Reads {
				v += fmt.Sprintf(" read=%s/%t", r.Bytes, r.Found)
			}
			for _, g := range op.Gets {
				v += fmt.Sprintf(" get=%d/%s:%s", g.Table, g.Key, g.Bytes)
			}
			v += "]"
		}
		out.Emit(Record{Key: ev.Key, Value: []byte(v)})
		if string(ev.Value) == "fail" {
			return errors.New("cannot post")
		}
		return nil
	}}
	g := txnGuest(op, host)
	evs := encode(kv("a", ""), kv("b", "fail"), kv("c", ""))
	outs := outcomes(
		abi.EventOutcome{Committed: true, Ops: []abi.OpOutcome{
			{Executed: true, Own: abi.Value{Found: true, Bytes: []byte("o")}, Reads: []abi.Value{{Found: true, Bytes: []byte("r")}, {}}},
			{Executed: true, Gets: []abi.KeyValue{{TableKey: abi.TableKey{Table: 2, Key: []byte("g")}, Value: abi.Value{Found: true, Bytes: []byte("gv")}}}},
		}},
		abi.EventOutcome{Committed: true},
		abi.EventOutcome{Ops: []abi.OpOutcome{{Executed: true}, {}}},
	)
	if st := runPost(g, evs, outs); st != abi.StatusOK {
		t.Fatalf("status %d, logs %q", st, host.logs)
	}
	var got []string
	for _, o := range host.outputs() {
		got = append(got, fmt.Sprintf("%d %s %s", o.Origin, o.Key, o.Value))
	}
	want := []string{
		"0 a committed=true [true own=o/true read=r/true read=/false] [true own=/false get=2/g:gv]",
		"2 c committed=false [true own=/false] [false own=/false]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("outputs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(host.emits) != 1 || fmt.Sprint(host.rejects) != "[1:cannot post]" {
		t.Errorf("%d emit calls, rejects %v", len(host.emits), host.rejects)
	}

	for name, c := range map[string]struct {
		events, outs []byte
		log          string
	}{
		"count":    {evs, outcomes(abi.EventOutcome{}), "post: outcomes of 1 events for a batch of 3"},
		"trailing": {encode(kv("a", "")), append(outcomes(abi.EventOutcome{}), 0), "post: abi: malformed outcomes"},
		"short":    {encode(kv("a", ""), kv("b", "")), outcomes(abi.EventOutcome{})[:4+4], "post: abi: malformed outcomes"},
		"batch":    {evs[:len(evs)-2], outs, "input batch"},
	} {
		host.logs = nil
		if st := runPost(g, c.events, c.outs); st != abi.StatusError || len(host.logs) != 1 || !strings.Contains(host.logs[0], c.log) {
			t.Errorf("%s: status %d, logs %q, want one containing %q", name, st, host.logs, c.log)
		}
	}

	// Without a Post handler there is nothing to do.
	host.emits = nil
	g = txnGuest(&Txn{Plan: op.Plan, Funcs: op.Funcs}, host)
	if st := runPost(g, evs, outs); st != abi.StatusOK || len(host.emits) != 0 {
		t.Errorf("no Post: status %d, %d emits", st, len(host.emits))
	}
}

func TestTableID(t *testing.T) {
	host := newTxnHost("first", "second")
	g := txnGuest(&Txn{Plan: func(Record, *Planner) error { return nil }, Funcs: []TxnFunc{keep}}, host)
	if _, err := TableID("second"); !errors.Is(err, errNoCall) {
		t.Errorf("outside a call: error %v", err)
	}
	active.Store(g)
	defer active.Store(nil)
	for range 2 {
		if id, err := TableID("second"); id != 1 || err != nil {
			t.Errorf("TableID(second) = %d, %v", id, err)
		}
	}
	if host.tableIDs != 1 {
		t.Errorf("%d table_id calls, want 1: the handle is cached", host.tableIDs)
	}
	if _, err := TableID("third"); !errors.Is(err, ErrUnknownTable) || !strings.Contains(err.Error(), `"third"`) {
		t.Errorf("TableID(third): %v", err)
	}
}
