package plugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

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
	q := &abi.ApplyRequest{Fn: 1, Event: 4, Op: 2, Key: []byte("k"), Reads: []abi.ReadValue{{TableKey: abi.TableKey{Key: []byte("r")}}}}
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
		q.Flags = 0
		if tc.nonDet {
			q.Flags = abi.OpFlagNonDet
		}
		eff, err := inst.Apply(ctx, q, fakeAccess{})
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
	if _, err := f.inst.Apply(ctx, &abi.ApplyRequest{}, fakeAccess{}); !errors.Is(err, ErrNotTransactional) {
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
// with the transactional exports only, and reports both kinds' missing
// exports for a module that serves neither.
func TestCheckTransactional(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	r := Check(ctx, eng, "txn.wasm", wasmModule{memory: true, funcs: txnReactor(abi.ApplyKeep, "")}.bytes())
	if !r.OK() || !slices.Equal(r.Kinds, []Kind{KindTransactional}) {
		t.Errorf("transactional module: kinds %v, problems %q", r.Kinds, r.Problems)
	}
	r = Check(ctx, eng, "none.wasm", wasmModule{memory: true, funcs: txnReactor(abi.ApplyKeep, abi.ExportPost)}.bytes())
	if r.OK() || len(r.Kinds) != 0 {
		t.Fatalf("module serving no kind: kinds %v, problems %q", r.Kinds, r.Problems)
	}
	for _, want := range []string{
		"missing export sluice_process (i32, i32) -> i32, required by map, filter, flatmap and keyed operators",
		"missing export sluice_post (i32, i32, i32, i32) -> i32, required by transactional operators",
	} {
		if !slices.Contains(r.Problems, want) {
			t.Errorf("problems %q lack %q", r.Problems, want)
		}
	}
}
