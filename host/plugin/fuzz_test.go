package plugin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/txn"
)

// fuzzEngineConfig is the engine of the fuzz tests: the host functions, a
// short call timeout (a mutated module may spin in its initialiser), a
// small memory limit (the fuzzer runs a worker per core), and no
// compilation cache (it would fill with modules seen once).
func fuzzEngineConfig() runtime.Config {
	return runtime.NewConfig().
		WithHostModules(HostModule()).
		WithCallTimeout(100 * time.Millisecond).
		WithMemoryLimitPages(256)
}

// FuzzLoad feeds arbitrary bytes to Check and Load as a module: they must
// never panic, Load must fail only with a *LoadError listing its problems,
// and the two must agree on whether the module serves the kind. A module
// that loads is then run once, through every export of its kind.
func FuzzLoad(f *testing.F) {
	wasms, err := filepath.Glob(filepath.Join(hostileDir, "*.wasm"))
	if err != nil {
		f.Fatal(err)
	}
	inputs, err := filepath.Glob(filepath.Join(inputsDir, "*.wasm"))
	if err != nil {
		f.Fatal(err)
	}
	for _, w := range append(wasms, inputs...) {
		b, err := os.ReadFile(w)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(wasmModule{memory: true, funcs: reactor(abi.Version)}.bytes())
	f.Add(wasmModule{memory: true, funcs: txnReactor(abi.ApplyKeep, "")}.bytes())
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte{})

	ctx := context.Background()
	eng := newEngine(f, fuzzEngineConfig())
	discard := WithLogger(slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		r := mustCheck(ctx, t, eng, "fuzz.wasm", wasm)
		kind := KindMap
		if len(wasm)%2 == 1 {
			kind = KindTransactional
		}
		p, err := Load(ctx, eng, "fuzz.wasm", wasm, kind, discard, WithTables([]string{"t"}))
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 || le.Plugin != "fuzz.wasm" {
				t.Fatalf("Load failed with %T %v, want a *LoadError with problems", err, err)
			}
			if slices.Contains(r.Kinds, kind) {
				t.Fatalf("Check says the module serves %s operators, Load refuses it: %v", kind, err)
			}
			return
		}
		defer func() { _ = p.Close(ctx) }()
		if !slices.Contains(r.Kinds, kind) {
			t.Fatalf("Load accepts the module as %s, Check says it serves %v: %q", kind, r.Kinds, r.Problems)
		}
		inst, err := p.NewInstance(ctx, nil)
		if err != nil {
			return // its sluice_configure failed: an error is all that is asked
		}
		defer func() { _ = inst.Close(ctx) }()
		in := records("x", "y")
		in[1].Input = 1 // sent to a module that declares inputs only
		var out Output
		if !kind.Transactional() {
			_ = inst.Process(ctx, in, nil, &out)
			return
		}
		_ = inst.Plan(ctx, in, func(*abi.OpDecl) error { return nil })
		_, _ = inst.ApplyOp(ctx, 0, 0, &txn.Op{Write: txn.Key{Key: "k"}}, fakeAccess{})
		outcomes := abi.AppendOutcomesHeader(nil, 2)
		for range 2 {
			outcomes = abi.AppendEventOutcome(outcomes, &abi.EventOutcome{Committed: true})
		}
		_ = inst.Post(ctx, in, outcomes, &out)
	})
}

// The phases FuzzHostFuncs calls a host function in: the guest call in
// progress, as the Instance sets it up, and who is calling.
const (
	fuzzNoCall      = iota // outside any Sluice guest call
	fuzzMap                // sluice_process of a map operator
	fuzzKeyed              // sluice_process of a keyed operator
	fuzzConfigure          // sluice_configure of a keyed operator
	fuzzPlan               // sluice_plan
	fuzzApply              // sluice_apply of a deterministic operation
	fuzzApplyNonDet        // sluice_apply of a non-deterministic operation
	fuzzPost               // sluice_post
	fuzzPhases
)

// fuzzAccess is the txn.Access of FuzzHostFuncs: the own key holds "own",
// the declared read "read", and every other key of tables 0 and 1 the
// value fuzzValue gives, which a non-deterministic operation may read;
// writes are refused as txn refuses them.
type fuzzAccess struct{ op *txn.Op }

func (fuzzAccess) Worker() int         { return 0 }
func (fuzzAccess) Own() ([]byte, bool) { return []byte("own"), true }
func (a fuzzAccess) Read(i int) ([]byte, bool) {
	if i < len(a.op.Reads) {
		return []byte("read"), true
	}
	return nil, false
}

func (a fuzzAccess) Get(k txn.Key) ([]byte, bool, error) {
	if !a.op.NonDet {
		return nil, false, txn.ErrUndeclared // the host answers declared keys itself
	}
	return fuzzValue(k)
}

func (a fuzzAccess) Put(k txn.Key, _ []byte) error { return a.write(k) }
func (a fuzzAccess) Delete(k txn.Key) error        { return a.write(k) }

func (a fuzzAccess) write(k txn.Key) error {
	if !a.op.NonDet || k.Table != a.op.Table {
		return txn.ErrUndeclared
	}
	return nil
}

// fuzzValue is the value of k for a non-deterministic operation: absent
// for an empty key, refused outside tables 0 and 1, else the key twice.
func fuzzValue(k txn.Key) ([]byte, bool, error) {
	switch {
	case k.Table > 1:
		return nil, false, txn.ErrUndeclared
	case k.Key == "":
		return nil, false, nil
	}
	return []byte(k.Key + k.Key), true, nil
}

// fuzzExpected is what txn_get must answer for table and key in phase ph.
func fuzzExpected(ph int, op *txn.Op, table uint32, key []byte) ([]byte, bool, error) {
	if ph == fuzzApply {
		switch {
		case table == op.Reads[0].Table && string(key) == op.Reads[0].Key:
			return []byte("read"), true, nil
		case table == op.Write.Table && string(key) == op.Write.Key:
			return []byte("own"), true, nil
		}
		return nil, false, txn.ErrUndeclared
	}
	return fuzzValue(txn.Key{Table: table, Key: string(key)})
}

// FuzzHostFuncs calls every host function, through a module that
// re-exports them (testdata/hostile/reexport.wat), with arguments and
// guest memory from the fuzz input, in every phase of a guest call. A call
// must return normally or fail the guest call with a *runtime.HostError of
// that function: never crash the host, and never fail by a Go runtime
// error (an index out of range recovered by the engine would be a bug that
// the engine hides). Values state_get and txn_get copy must be the right
// ones, and emitted records must respect the call's limits.
func FuzzHostFuncs(f *testing.F) {
	ctx := context.Background()
	eng := newEngine(f, fuzzEngineConfig())
	mod, err := eng.Compile(ctx, "reexport.wasm", hostileModule(f, "reexport"))
	if err != nil {
		f.Fatal(err)
	}
	funcs := HostModule().Funcs
	index := func(name string) uint8 {
		return uint8(slices.IndexFunc(funcs, func(h runtime.HostFunc) bool { return h.Name == name }))
	}

	batch := abi.AppendBatchHeader(nil, 2)
	batch = abi.AppendRecord(batch, &abi.Record{Origin: 1, Key: []byte("k"), Value: []byte("v"),
		Headers: []abi.Header{{Name: []byte("h"), Value: []byte("x")}}})
	batch = abi.AppendRecord(batch, &abi.Record{Origin: 0, Time: 7})
	decls := abi.AppendOpDecl(nil, &abi.OpDecl{Event: 0, Fn: 1, Table: 0, Key: []byte("a7"),
		Reads: []abi.TableKey{{Table: 1, Key: []byte("b")}}, Arg: []byte{5, 0, 0, 0}})
	decls = abi.AppendOpDecl(decls, &abi.OpDecl{Event: 1, Flags: abi.OpFlagNonDet, Table: 1})
	n := func(ph, records int) uint8 { return uint8(ph + fuzzPhases*records) }
	for _, s := range []struct {
		fn, ph             uint8
		a0, a1, a2, a3, a4 uint32
		mem                []byte
	}{
		{index(abi.FuncEmit), n(fuzzMap, 2), 0, uint32(len(batch)), 0, 0, 0, batch},
		{index(abi.FuncEmit), n(fuzzPost, 1), 0, uint32(len(batch)), 0, 0, 0, batch},
		{index(abi.FuncEmit), n(fuzzMap, 2), 0xfffffff0, 0x20, 0, 0, 0, nil},
		{index(abi.FuncReject), n(fuzzKeyed, 3), 2, 0, 5, 0, 0, []byte("bad input")},
		{index(abi.FuncTableID), n(fuzzKeyed, 1), 0, 6, 0, 0, 0, []byte("totals")},
		{index(abi.FuncTableID), n(fuzzPlan, 1), 0, 1, 0, 0, 0, []byte("t")},
		{index(abi.FuncStateGet), n(fuzzKeyed, 1), 0, 0, 1, 16, 8, []byte("k")},
		{index(abi.FuncStatePut), n(fuzzKeyed, 1), 1, 0, 1, 1, 2, []byte("kvv")},
		{index(abi.FuncStateDelete), n(fuzzKeyed, 1), 0, 0, 7, 0, 0, []byte("foreign")},
		{index(abi.FuncLog), n(fuzzConfigure, 0), 3, 0, 4, 0, 0, []byte("oops")},
		{index(abi.FuncTxnPlan), n(fuzzPlan, 2), 0, uint32(len(decls)), 0, 0, 0, decls},
		{index(abi.FuncTxnGet), n(fuzzApply, 0), 1, 0, 1, 64, 8, []byte("r")},
		{index(abi.FuncTxnGet), n(fuzzApplyNonDet, 0), 0, 0, 3, 64, 2, []byte("abc")},
		{index(abi.FuncTxnPut), n(fuzzApplyNonDet, 0), 0, 0, 1, 1, 2, []byte("kvv")},
		{index(abi.FuncTxnDelete), n(fuzzApply, 0), 0, 0, 1, 0, 0, []byte("k")},
		{index(abi.FuncTxnGet), n(fuzzNoCall, 0), 0, 0, 1, 0, 0, nil},
	} {
		f.Add(s.fn, s.ph, s.a0, s.a1, s.a2, s.a3, s.a4, s.mem)
	}

	limits := Limits{MaxRecordBytes: 256, MaxOutputBytes: 4096}.withDefaults()
	logger := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, fn, ph uint8, a0, a1, a2, a3, a4 uint32, mem []byte) {
		h := funcs[int(fn)%len(funcs)]
		phase, nrec := int(ph)%fuzzPhases, uint32(ph)/fuzzPhases
		inst, err := mod.Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = inst.Close(ctx) }()
		m := inst.Memory()
		if len(mem) > int(m.Size()) {
			mem = mem[:m.Size()]
		}
		m.Write(0, mem)
		g, ok := inst.Func(h.Name)
		if !ok {
			t.Fatalf("reexport.wasm has no export %s", h.Name)
		}

		// The key a get names, read before the call: its value may be
		// copied over it.
		var key []byte
		if h.Name == abi.FuncTxnGet || h.Name == abi.FuncStateGet {
			k, _ := m.Read(a1, a2)
			key = bytes.Clone(k)
		}

		c := &call{plugin: "reexport.wasm", limits: limits, logger: logger, tables: []string{"t", "u"}}
		st := newFakeState()
		st.data[0]["k"] = "state value"
		out := &Output{}
		op := &txn.Op{Write: txn.Key{Table: 0, Key: "k"}, Reads: []txn.Key{{Table: 1, Key: "r"}}}
		switch phase {
		case fuzzMap:
			c.kind = KindMap
			c.begin(abi.ExportProcess, nil, out, nrec, 0)
		case fuzzKeyed:
			c.kind = KindKeyed
			c.begin(abi.ExportProcess, st, out, nrec, 0)
		case fuzzConfigure:
			c.kind = KindKeyed
			c.begin(abi.ExportConfigure, nil, nil, 0, 0)
		case fuzzPlan:
			c.kind = KindTransactional
			c.begin(abi.ExportPlan, nil, nil, nrec, 0)
			c.tx.decl = func(d *abi.OpDecl) error {
				if d.Event >= nrec {
					return errors.New("event not in the batch")
				}
				return nil
			}
		case fuzzApply, fuzzApplyNonDet:
			c.kind = KindTransactional
			if phase == fuzzApplyNonDet {
				op = &txn.Op{NonDet: true, Table: 0, Reads: op.Reads}
			}
			c.begin(abi.ExportApply, nil, nil, 0, 0)
			c.tx.beginApply(op, fuzzAccess{op: op})
		case fuzzPost:
			c.kind = KindTransactional
			c.begin(abi.ExportPost, nil, out, nrec, 0)
		}
		cctx := ctx
		if phase != fuzzNoCall {
			cctx = context.WithValue(ctx, callKey{}, c)
		}
		stack := []uint64{uint64(a0), uint64(a1), uint64(a2), uint64(a3), uint64(a4)}
		err = g.Call(cctx, stack)
		accErr := c.tx.endApply()
		c.end(ctx)

		if err != nil {
			var gre goruntime.Error
			if errors.As(err, &gre) {
				t.Fatalf("%s failed by a Go runtime error: %v", h.Name, err)
			}
			var re *runtime.Error
			var he *runtime.HostError
			if !errors.As(err, &re) || re.Kind != runtime.KindHost || !errors.As(err, &he) || he.Func != h.Name {
				t.Fatalf("%s failed with %T %v, want a host function error of %s", h.Name, err, err, h.Name)
			}
			return
		}
		switch h.Name {
		case abi.FuncEmit:
			for i, r := range out.Records {
				if r.Origin >= nrec || abi.EncodedSize(&r) > limits.MaxRecordBytes {
					t.Fatalf("emitted record %d has Origin %d (of %d records), %d bytes (limit %d)",
						i, r.Origin, nrec, abi.EncodedSize(&r), limits.MaxRecordBytes)
				}
			}
		case abi.FuncReject:
			if len(out.Rejects) != 1 || out.Rejects[0].Index != int(a0) || a0 >= nrec {
				t.Fatalf("reject of origin %d in a batch of %d: rejects %+v", a0, nrec, out.Rejects)
			}
		case abi.FuncStateGet:
			got := i32(stack[0])
			want, found, _ := st.Get(i32(uint64(a0)), key)
			switch {
			case !found:
				if got != abi.StatusNotFound {
					t.Fatalf("state_get of an absent key = %d", got)
				}
			case got != int32(len(want)):
				t.Fatalf("state_get = %d, want the length %d", got, len(want))
			case uint32(len(want)) <= a4:
				if b, _ := m.Read(a3, uint32(len(want))); !bytes.Equal(b, want) {
					t.Fatalf("state_get copied %q, want %q", b, want)
				}
			}
		case abi.FuncTxnGet:
			got := i32(stack[0])
			want, found, werr := fuzzExpected(phase, op, a0, key)
			switch {
			case werr != nil:
				if got != abi.StatusUndeclared || !errors.Is(accErr, txn.ErrUndeclared) {
					t.Fatalf("txn_get of an undeclared key = %d (access error %v), want StatusUndeclared", got, accErr)
				}
			case !found:
				if got != abi.StatusNotFound {
					t.Fatalf("txn_get of an absent key = %d", got)
				}
			case got != int32(len(want)):
				t.Fatalf("txn_get = %d, want the length %d", got, len(want))
			case uint32(len(want)) <= a4:
				if b, _ := m.Read(a3, uint32(len(want))); !bytes.Equal(b, want) {
					t.Fatalf("txn_get copied %q, want %q", b, want)
				}
			}
		}
	})
}
