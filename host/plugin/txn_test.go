package plugin

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/txn"
)

// txnReactor returns the functions of a minimal transactional reactor whose
// sluice_apply returns applyRet; without is the name of an export to leave
// out.
func txnReactor(applyRet int32, without string) []wasmFunc {
	fs := []wasmFunc{
		{export: abi.ExportABIVersion, sig: sig(0, 1), ret: abi.Version},
		{export: abi.ExportAlloc, sig: sig(1, 1), ret: 1024},
		{export: abi.ExportPlan, sig: sig(2, 1), ret: abi.StatusOK},
		{export: abi.ExportApply, sig: sig(2, 1), ret: applyRet},
		{export: abi.ExportPost, sig: sig(4, 1), ret: abi.StatusOK},
	}
	return slices.DeleteFunc(fs, func(f wasmFunc) bool { return f.export == without })
}

func TestLoadTransactional(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	wasm := wasmModule{memory: true, funcs: txnReactor(abi.ApplyKeep, "")}.bytes()
	p, err := Load(ctx, eng, "txn.wasm", wasm, KindTransactional)
	if err != nil {
		t.Fatalf("a module without sluice_process must load as transactional: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	le := loadError(t, eng, "txn.wasm", wasm, KindMap)
	if want := "missing export sluice_process (i32, i32) -> i32, required by map operators"; !slices.Contains(le.Problems, want) {
		t.Errorf("as a map operator: problems %q lack %q", le.Problems, want)
	}
}

func TestLoadTransactionalProblems(t *testing.T) {
	eng := newEngine(t, engineConfig())
	for _, tc := range []struct {
		name  string
		funcs []wasmFunc
		want  string
	}{
		{"no post", txnReactor(0, abi.ExportPost),
			"missing export sluice_post (i32, i32, i32, i32) -> i32, required by transactional operators"},
		{"no plan", txnReactor(0, abi.ExportPlan),
			"missing export sluice_plan (i32, i32) -> i32, required by transactional operators"},
		{"no apply", txnReactor(0, abi.ExportApply),
			"missing export sluice_apply (i32, i32) -> i32, required by transactional operators"},
		{"apply signature", append(txnReactor(0, abi.ExportApply), wasmFunc{export: abi.ExportApply, sig: sig(1, 1)}),
			"export sluice_apply has signature (i32) -> i32, want (i32, i32) -> i32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le := loadError(t, eng, "txn.wasm", wasmModule{memory: true, funcs: tc.funcs}.bytes(), KindTransactional)
			if len(le.Problems) != 1 || le.Problems[0] != tc.want {
				t.Errorf("problems = %q, want [%q]", le.Problems, tc.want)
			}
		})
	}
}

func TestLoadAcceptsTxnImports(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	var imports []wasmImport
	for _, f := range HostModule().Funcs {
		if strings.HasPrefix(f.Name, "txn_") {
			imports = append(imports, wasmImport{abi.HostModule, f.Name, f.Signature})
		}
	}
	if len(imports) != 4 {
		t.Fatalf("host module has %d txn_ functions, want 4", len(imports))
	}
	p, err := Load(ctx, eng, "txn.wasm", wasmModule{memory: true, imports: imports, funcs: txnReactor(0, "")}.bytes(), KindTransactional)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)
}

// fakeAccess is a txn.Access that answers every read with found=false and
// refuses writes.
type fakeAccess struct{}

func (fakeAccess) Worker() int                         { return 0 }
func (fakeAccess) Own() ([]byte, bool)                 { return nil, false }
func (fakeAccess) Read(int) ([]byte, bool)             { return nil, false }
func (fakeAccess) Get(k txn.Key) ([]byte, bool, error) { return nil, false, nil }
func (fakeAccess) Put(k txn.Key, _ []byte) error       { return txn.ErrUndeclared }
func (fakeAccess) Delete(k txn.Key) error              { return txn.ErrUndeclared }

// newTxnInstance loads a constant transactional module whose sluice_apply
// returns applyRet and makes an instance of it.
func newTxnInstance(t *testing.T, applyRet int32) *Instance {
	t.Helper()
	ctx := context.Background()
	eng := newEngine(t, engineConfig())
	p, err := Load(ctx, eng, "txn.wasm", wasmModule{memory: true, funcs: txnReactor(applyRet, "")}.bytes(), KindTransactional)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = inst.Close(ctx)
		_ = p.Close(ctx)
	})
	return inst
}

func TestApplyResultCodes(t *testing.T) {
	ctx := context.Background()
	o := &txn.Op{Fn: 1, Write: txn.Key{Key: "k"}, Reads: []txn.Key{{Key: "r"}}}
	for _, tc := range []struct {
		ret    int32
		nonDet bool
		want   txn.Effect
		err    error
	}{
		// The result slot is the request's first 8 bytes, left zero by
		// this guest: a write of the empty value at offset 0.
		{ret: abi.ApplyWrite, want: txn.Effect{}},
		{ret: abi.ApplyKeep, want: txn.Effect{Keep: true}},
		{ret: abi.ApplyDelete, want: txn.Effect{Delete: true}},
		{ret: abi.ApplyAbort, want: txn.Effect{Abort: true}},
		{ret: abi.ApplyWrite, nonDet: true, want: txn.Effect{Keep: true}},
		{ret: abi.ApplyAbort, nonDet: true, want: txn.Effect{Abort: true}},
		{ret: 7, err: ErrApplyResult},
		{ret: abi.StatusError, err: &StatusError{}},
	} {
		inst := newTxnInstance(t, tc.ret)
		o.NonDet = tc.nonDet
		eff, err := inst.ApplyOp(ctx, 4, 2, o, fakeAccess{})
		if tc.err == nil {
			if err != nil || eff.Keep != tc.want.Keep || eff.Delete != tc.want.Delete || eff.Abort != tc.want.Abort || len(eff.Value) != 0 {
				t.Errorf("code %d nonDet %v: %+v, %v; want %+v", tc.ret, tc.nonDet, eff, err, tc.want)
			}
			continue
		}
		var te *TxnError
		if !errors.As(err, &te) || te.Event != 4 || te.Op != 2 || te.Export != abi.ExportApply {
			t.Fatalf("code %d: err = %v, want a *TxnError for event 4 operation 2 of sluice_apply", tc.ret, err)
		}
		var se *StatusError
		if errors.As(tc.err, &se) {
			if !errors.As(err, &se) {
				t.Errorf("code %d: err = %v, want a *StatusError", tc.ret, err)
			}
		} else if !errors.Is(err, tc.err) {
			t.Errorf("code %d: err = %v, want %v", tc.ret, err, tc.err)
		}
		if !strings.Contains(err.Error(), `plugin "txn.wasm" export "sluice_apply": event 4 operation 2`) {
			t.Errorf("code %d: error %q does not name plugin, export, event and operation", tc.ret, err)
		}
	}
}

func TestTxnCallsNeedTransactionalKind(t *testing.T) {
	f := newFixture(t, fixtureConfig{guest: "upper"})
	ctx := context.Background()
	if err := f.inst.Plan(ctx, records("a"), func(*abi.OpDecl) error { return nil }); !errors.Is(err, ErrNotTransactional) {
		t.Errorf("Plan on a map instance: %v, want ErrNotTransactional", err)
	}
	if _, err := f.inst.ApplyOp(ctx, 0, 0, &txn.Op{}, fakeAccess{}); !errors.Is(err, ErrNotTransactional) {
		t.Errorf("Apply on a map instance: %v, want ErrNotTransactional", err)
	}
	if err := f.inst.Post(ctx, records("a"), nil, &Output{}); !errors.Is(err, ErrNotTransactional) {
		t.Errorf("Post on a map instance: %v, want ErrNotTransactional", err)
	}
	inst := newTxnInstance(t, 0)
	if err := inst.Process(ctx, records("a"), nil, &Output{}); err == nil || !strings.Contains(err.Error(), "transactional") {
		t.Errorf("Process on a transactional instance: %v, want a refusal", err)
	}
	if err := inst.Plan(ctx, nil, nil); err != nil {
		t.Errorf("Plan of an empty batch: %v", err)
	}
	if err := inst.Post(ctx, nil, nil, &Output{}); err != nil {
		t.Errorf("Post of an empty batch: %v", err)
	}
}

// TestCheckTransactional: Check lists the transactional kind for a module
// with the transactional exports only; a module with some of them and no
// sluice_process is told what the transactional kind misses, not what the
// batch kinds do.
func TestCheckTransactional(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	r := mustCheck(ctx, t, eng, "txn.wasm", wasmModule{memory: true, funcs: txnReactor(abi.ApplyKeep, "")}.bytes())
	if !r.OK() || !slices.Equal(r.Kinds, []Kind{KindTransactional}) {
		t.Errorf("transactional module: kinds %v, problems %q", r.Kinds, r.Problems)
	}
	r = mustCheck(ctx, t, eng, "none.wasm", wasmModule{memory: true, funcs: txnReactor(abi.ApplyKeep, abi.ExportPost)}.bytes())
	if r.OK() || len(r.Kinds) != 0 {
		t.Fatalf("module serving no kind: kinds %v, problems %q", r.Kinds, r.Problems)
	}
	want := []string{"missing export sluice_post (i32, i32, i32, i32) -> i32, required by transactional operators"}
	if !slices.Equal(r.Problems, want) {
		t.Errorf("problems %q, want %q", r.Problems, want)
	}
}

// TestEncodeRequestMatchesABI: ApplyOp's encoding of a request is
// abi.AppendApplyRequest's.
func TestEncodeRequestMatchesABI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.SliceOfN(rapid.Byte(), 0, 12)
		o := &txn.Op{Fn: rapid.Uint32().Draw(t, "fn"), NonDet: rapid.Bool().Draw(t, "nondet"), Table: rapid.Uint32().Draw(t, "scope"), Arg: bs.Draw(t, "arg"),
			Write: txn.Key{Table: rapid.Uint32().Draw(t, "table"), Key: string(bs.Draw(t, "key"))}, Window: rapid.Uint32Range(0, 2).Draw(t, "window")}
		q := &abi.ApplyRequest{Fn: o.Fn, Event: rapid.Uint32().Draw(t, "event"), Op: rapid.Uint32().Draw(t, "op"), Arg: o.Arg}
		acc := valuesAccess{}
		for range rapid.IntRange(0, 3).Draw(t, "reads") {
			k := txn.Key{Table: rapid.Uint32().Draw(t, "read table"), Key: string(bs.Draw(t, "read key"))}
			v := abi.Value{Found: rapid.Bool().Draw(t, "found"), Bytes: bs.Draw(t, "value")}
			rv := abi.ReadValue{TableKey: abi.TableKey{Table: k.Table, Key: []byte(k.Key)}, Value: v}
			var w []txn.Version
			if o.Window > 0 {
				for range rapid.IntRange(0, 2).Draw(t, "versions") {
					x := txn.Version{Back: uint64(rapid.Uint32Range(1, o.Window).Draw(t, "back")), Value: txn.Value{Found: rapid.Bool().Draw(t, "version found"), Bytes: bs.Draw(t, "version")}}
					w = append(w, x)
					rv.Window = append(rv.Window, abi.WindowVersion{Back: uint32(x.Back), Value: abi.Value{Found: x.Value.Found, Bytes: x.Value.Bytes}})
				}
			}
			o.Reads = append(o.Reads, k)
			acc.vals = append(acc.vals, v)
			acc.windows = append(acc.windows, w)
			q.Reads = append(q.Reads, rv)
		}
		flags, table, key := abi.OpFlagNonDet, o.Table, ""
		var own []byte
		if !o.NonDet {
			q.Own = abi.Value{Found: rapid.Bool().Draw(t, "own found"), Bytes: bs.Draw(t, "own")}
			own, flags, table, key = q.Own.Bytes, 0, o.Write.Table, o.Write.Key
			if q.Own.Found {
				flags = applyFlagOwnFound
			}
			q.Key = []byte(key)
		}
		if o.Window > 0 {
			flags |= abi.OpFlagWindow
		}
		q.Flags, q.Table = flags&(abi.OpFlagNonDet|abi.OpFlagWindow), table
		want := abi.AppendApplyRequest(nil, q)
		got := make([]byte, len(want))
		encodeRequest(got, q.Event, q.Op, flags, table, key, own, o, acc, acc)
		if !bytes.Equal(got, want) {
			t.Fatalf("encodeRequest wrote %x, abi.AppendApplyRequest %x", got, want)
		}
	})
}

// valuesAccess is a txn.Access and txn.WindowReader whose declared reads
// have the given values and windows.
type valuesAccess struct {
	vals    []abi.Value
	windows [][]txn.Version
}

func (valuesAccess) Worker() int                       { return 0 }
func (valuesAccess) Own() ([]byte, bool)               { return nil, false }
func (a valuesAccess) Read(i int) ([]byte, bool)       { return a.vals[i].Bytes, a.vals[i].Found }
func (a valuesAccess) Window(i int) []txn.Version      { return a.windows[i] }
func (valuesAccess) Get(txn.Key) ([]byte, bool, error) { return nil, false, nil }
func (valuesAccess) Put(txn.Key, []byte) error         { return nil }
func (valuesAccess) Delete(txn.Key) error              { return nil }

// checkNextDecl requires nextDecl, declaration after declaration, to decode
// what abi.PlanDecoder decodes, and to stop where abi's decoder fails.
func checkNextDecl(t *rapid.T, b []byte) {
	var dec abi.PlanDecoder
	dec.Reset(b)
	var want, got abi.OpDecl
	var reads []abi.TableKey
	off := 0
	for dec.Next(&want) {
		next := nextDecl(b, off, &got, &reads)
		if next < 0 {
			t.Fatalf("nextDecl refused at %d the declaration abi decodes as %+v", off, want)
		}
		if got.Event != want.Event || got.Fn != want.Fn || got.Flags != want.Flags || got.Table != want.Table || got.Window != want.Window ||
			!bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Arg, want.Arg) || len(got.Reads) != len(want.Reads) {
			t.Fatalf("nextDecl decoded %+v, abi %+v", got, want)
		}
		for i := range got.Reads {
			if got.Reads[i].Table != want.Reads[i].Table || !bytes.Equal(got.Reads[i].Key, want.Reads[i].Key) {
				t.Fatalf("nextDecl decoded %+v, abi %+v", got, want)
			}
		}
		off = next
	}
	if dec.Err() != nil && nextDecl(b, off, &got, &reads) >= 0 {
		t.Fatalf("nextDecl accepted at %d what abi refuses: %v", off, dec.Err())
	}
	if dec.Err() == nil && off != len(b) {
		t.Fatalf("nextDecl ended at %d of %d bytes", off, len(b))
	}
}

// TestNextDeclMatchesABI: on encoded declarations, truncated and corrupted,
// nextDecl and abi.PlanDecoder agree.
func TestNextDeclMatchesABI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.SliceOfN(rapid.Byte(), 0, 10)
		var b []byte
		for range rapid.IntRange(1, 4).Draw(t, "decls") {
			d := &abi.OpDecl{Event: rapid.Uint32().Draw(t, "event"), Fn: rapid.Uint32().Draw(t, "fn"),
				Flags: rapid.SampledFrom([]uint32{0, abi.OpFlagNonDet, abi.OpFlagWindow, abi.OpFlagNonDet | abi.OpFlagWindow}).Draw(t, "flags"),
				Table: rapid.Uint32().Draw(t, "table"), Key: bs.Draw(t, "key"), Arg: bs.Draw(t, "arg"), Window: rapid.Uint32Range(0, 3).Draw(t, "window")}
			for range rapid.IntRange(0, 3).Draw(t, "reads") {
				d.Reads = append(d.Reads, abi.TableKey{Table: rapid.Uint32().Draw(t, "read table"), Key: bs.Draw(t, "read key")})
			}
			b = abi.AppendOpDecl(b, d)
		}
		checkNextDecl(t, b)
		checkNextDecl(t, b[:rapid.IntRange(0, len(b)).Draw(t, "cut")])
		c := bytes.Clone(b)
		c[rapid.IntRange(0, len(c)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
		checkNextDecl(t, c)
	})
}

// BenchmarkDecodeDecls decodes a txn_plan call's worth of declarations (a
// Streaming Ledger transfer's four operations, 256 times) with nextDecl,
// as txn_plan does, and with abi.PlanDecoder, its fallback.
func BenchmarkDecodeDecls(b *testing.B) {
	var enc []byte
	for e := range 256 {
		src := abi.TableKey{Key: []byte("00001234")}
		for m, k := range []string{"00005678", "00004321", "00008765", "00001234"} {
			d := &abi.OpDecl{Event: uint32(e), Fn: uint32(m % 3), Key: []byte(k), Arg: []byte("123456789012")}
			if m < 3 {
				d.Reads = []abi.TableKey{src}
			}
			enc = abi.AppendOpDecl(enc, d)
		}
	}
	b.Run("nextDecl", func(b *testing.B) {
		var d abi.OpDecl
		var reads []abi.TableKey
		for b.Loop() {
			for off := 0; off < len(enc); {
				if off = nextDecl(enc, off, &d, &reads); off < 0 {
					b.Fatal("refused")
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/decl")
	})
	b.Run("abi", func(b *testing.B) {
		var dec abi.PlanDecoder
		var d abi.OpDecl
		for b.Loop() {
			dec.Reset(enc)
			for dec.Next(&d) {
			}
			if dec.Err() != nil {
				b.Fatal(dec.Err())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/decl")
	})
}
