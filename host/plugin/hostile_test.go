package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/wasmbin"
	"github.com/sluicehq/sluice/txn"
)

//go:generate sh testdata/hostile/build.sh

// The hostile-module suite: small WAT modules under testdata/hostile that
// do what a buggy or malicious guest would (spin, exhaust memory or stack,
// lie about their allocations, hand host functions bad pointers, call them
// from the wrong phase, flood the host with output), each of which must
// leave the host running with a specific error naming the plugin and the
// export or host function at fault.

// hostileDir holds the modules of the suite, as text and as wat2wasm made
// them.
const hostileDir = "testdata/hostile"

// hostileModule returns the bytes of testdata/hostile/name.wasm.
func hostileModule(t testing.TB, name string) []byte { return testdataModule(t, hostileDir, name) }

// The committed .wasm files are what wat2wasm makes of the .wat files.
func TestHostileModulesUpToDate(t *testing.T) { watUpToDate(t, hostileDir) }

// testdataModule returns the bytes of dir/name.wasm.
func testdataModule(t testing.TB, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// watUpToDate checks that every committed .wasm file of dir is what
// wat2wasm makes of the .wat file beside it.
func watUpToDate(t *testing.T, dir string) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	wats, err := filepath.Glob(filepath.Join(dir, "*.wat"))
	if err != nil || len(wats) == 0 {
		t.Fatalf("no .wat files in %s: %v", dir, err)
	}
	for _, w := range wats {
		out := filepath.Join(t.TempDir(), "out.wasm")
		if b, err := exec.Command("wat2wasm", "--debug-names", w, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", w, err, b)
		}
		got, _ := os.ReadFile(out)
		have, _ := os.ReadFile(strings.TrimSuffix(w, ".wat") + ".wasm")
		if !bytes.Equal(got, have) {
			t.Errorf("%s.wasm is stale: run go generate ./host/plugin/", strings.TrimSuffix(w, ".wat"))
		}
	}
}

// hostileConfig says how to load a module of the suite.
type hostileConfig struct {
	module  string
	kind    Kind
	config  string
	timeout time.Duration // the engine's call timeout; 0 for the tests' default
	pages   uint32        // the engine's memory limit; 0 for the default
	limits  Limits
}

// newHostile loads a module of the suite and makes an instance of it, all
// released when t ends. The plugin is named after the module's file.
func newHostile(t testing.TB, hc hostileConfig) *fixture {
	t.Helper()
	if hc.kind == "" {
		hc.kind = KindMap
	}
	cfg := engineConfig()
	if hc.timeout > 0 {
		cfg = cfg.WithCallTimeout(hc.timeout)
	}
	if hc.pages > 0 {
		cfg = cfg.WithMemoryLimitPages(hc.pages)
	}
	ctx := context.Background()
	eng := newEngine(t, cfg)
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logBuf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := Load(ctx, eng, hc.module+".wasm", hostileModule(t, hc.module), hc.kind,
		WithLimits(hc.limits), WithLogger(logger), WithTables([]string{"accounts", "books"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	inst, err := p.NewInstance(ctx, []byte(hc.config))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &fixture{t: t, p: p, inst: inst, log: &logBuf, st: newFakeState(), config: hc.config}
}

// rec is a record whose time selects what a module of the suite does (the
// low 32 bits of record 0's time) and whose key, when not empty, asks it
// to misbehave.
func rec(sel uint32, key string) abi.Record {
	return abi.Record{Time: int64(sel), Key: []byte(key), Value: []byte("v")}
}

// rejectOf processes the single record r, which must fail, and returns the
// error of its reject (see checkReject).
func rejectOf(t *testing.T, f *fixture, r abi.Record, export string) error {
	t.Helper()
	var out Output
	if err := f.inst.Process(context.Background(), []abi.Record{r}, f.st, &out); err != nil {
		t.Fatalf("Process returned %v: a guest's failure must not stop the operator", err)
	}
	return checkReject(t, f, &out, export)
}

// checkReject checks that out holds only the reject of record 0, with a
// *RecordError naming the plugin, the export and the record, and returns
// its error.
func checkReject(t *testing.T, f *fixture, out *Output, export string) error {
	t.Helper()
	if len(out.Records) != 0 || len(out.Rejects) != 1 || out.Rejects[0].Index != 0 {
		t.Fatalf("%d records, rejects %+v: want the record rejected", len(out.Records), out.Rejects)
	}
	err := out.Rejects[0].Err
	var re *RecordError
	if !errors.As(err, &re) || re.Plugin != f.p.Name() || re.Export != export || re.Index != 0 {
		t.Fatalf("reject error = %T %v, want a *RecordError of plugin %q export %q record 0", err, err, f.p.Name(), export)
	}
	if want := fmt.Sprintf("plugin %q export %q: input record 0: ", f.p.Name(), export); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not begin with %q", err, want)
	}
	return err
}

// echoes checks that the instance works: a well-behaved record comes back
// unchanged.
func echoes(t *testing.T, f *fixture) {
	t.Helper()
	in := []abi.Record{rec(0, ""), rec(0, "")}
	in[1].Value = []byte("second")
	var out Output
	if err := f.inst.Process(context.Background(), in, f.st, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Rejects) != 0 || !equal(values(&out), []string{"v", "second"}) {
		t.Fatalf("after the failure: values %q, rejects %+v; want the batch echoed", values(&out), out.Rejects)
	}
}

// hostErrorOf checks that err is a host function error of fn whose reason
// begins with reason, and that its message names fn.
func hostErrorOf(t *testing.T, err error, fn, reason string) {
	t.Helper()
	var he *runtime.HostError
	if !errors.Is(err, runtime.ErrHost) || !errors.As(err, &he) {
		t.Fatalf("err = %v, want a host function error", err)
	}
	if he.Func != fn || !strings.HasPrefix(he.Reason, reason) {
		t.Errorf("host error of %s: %q, want %s: %q...", he.Func, he.Reason, fn, reason)
	}
	if !strings.Contains(err.Error(), "host function "+fn+": ") {
		t.Errorf("error %q does not name host function %s", err, fn)
	}
}

// txnErrorOf checks that err is a *TxnError of export (for event 0
// operation 0 of sluice_apply) and returns it.
func txnErrorOf(t *testing.T, f *fixture, err error, export string) *TxnError {
	t.Helper()
	var te *TxnError
	if !errors.As(err, &te) || te.Plugin != f.p.Name() || te.Export != export {
		t.Fatalf("err = %T %v, want a *TxnError of plugin %q export %q", err, err, f.p.Name(), export)
	}
	want := fmt.Sprintf("plugin %q export %q: ", f.p.Name(), export)
	if export == abi.ExportApply {
		want = fmt.Sprintf("plugin %q export %q: event 0 operation 0: ", f.p.Name(), export)
	}
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not begin with %q", err, want)
	}
	return te
}

// plan runs sluice_plan over one event with selector sel and key, and
// returns its error.
func (f *fixture) plan(sel uint32, key string) error {
	return f.inst.Plan(context.Background(), []abi.Record{rec(sel, key)}, func(*abi.OpDecl) error { return nil })
}

// apply runs sluice_apply for operation 0 of event 0, a deterministic
// operation of function fn.
func (f *fixture) apply(fn uint32) (txn.Effect, error) {
	o := &txn.Op{Fn: fn, Write: txn.Key{Key: "k"}}
	return f.inst.ApplyOp(context.Background(), 0, 0, o, fakeAccess{})
}

// post runs sluice_post over one event with selector sel and returns its
// output and error.
func (f *fixture) post(sel uint32, key string) (*Output, error) {
	out := &Output{}
	events := []abi.Record{rec(sel, key)}
	outcomes := abi.AppendOutcomesHeader(nil, 1)
	outcomes = abi.AppendEventOutcome(outcomes, &abi.EventOutcome{Committed: true})
	return out, f.inst.Post(context.Background(), events, outcomes, out)
}

func TestHostileLoad(t *testing.T) {
	eng := newEngine(t, engineConfig().WithCallTimeout(200*time.Millisecond))
	for _, tc := range []struct {
		module string
		kind   Kind
		want   []string // the problems, in order
		is     []error  // what the *LoadError must wrap
	}{
		{module: "unknown_import", want: []string{
			"import sluice.frobnicate: the host has no such function (it provides emit, reject, table_id, state_get, state_put, state_delete, log, txn_plan, txn_get, txn_put, txn_delete)"}},
		{module: "foreign_import", want: []string{
			`import env.now () -> i64: module "env" is not provided; plugins may import only from "sluice" and "wasi_snapshot_preview1"`}},
		{module: "import_signature", want: []string{
			"import sluice.log has signature (i32, i32), want (i32, i32, i32)"}},
		{module: "abi_version", want: []string{
			"module declares ABI version 2, this host speaks version 1"}},
		{module: "missing_export", want: []string{
			"missing export sluice_alloc (i32) -> i32, required by map operators"}},
		{module: "missing_export", kind: KindTransactional, want: []string{
			"missing export sluice_alloc (i32) -> i32, required by transactional operators",
			"missing export sluice_plan (i32, i32) -> i32, required by transactional operators",
			"missing export sluice_apply (i32, i32) -> i32, required by transactional operators",
			"missing export sluice_post (i32, i32, i32, i32) -> i32, required by transactional operators"}},
		{module: "export_signature", want: []string{
			"export sluice_alloc has signature (i64) -> i32, want (i32) -> i32",
			"export sluice_process has signature (i32) -> i32, want (i32, i32) -> i32"}},
		{module: "start_trap", want: []string{
			"instantiating the module failed: wasm error: unreachable"},
			is: []error{runtime.ErrLink}},
		{module: "init_loop", want: []string{
			"calling _initialize failed: the call ran past its timeout of 200ms: context deadline exceeded"},
			is: []error{runtime.ErrLink, context.DeadlineExceeded}},
		{module: "version_trap", want: []string{
			"calling sluice_abi_version failed: wasm error: unreachable"},
			is: []error{runtime.ErrTrap}},
		{module: "memory_limit", want: []string{
			"not a valid WebAssembly module: section memory: min 2048 pages (128 Mi) over limit of 1024 pages (64 Mi)"},
			is: []error{runtime.ErrCompile}},
		{module: "reserved_export", want: []string{
			"export sluice_on_timer is reserved for a later version of the ABI (abi/ABI.md section 11): a version-1 module must not export it"}},
		{module: "reserved_export", kind: KindKeyed, want: []string{
			"export sluice_on_timer is reserved for a later version of the ABI (abi/ABI.md section 11): a version-1 module must not export it"}},
		{module: "reserved_names", want: []string{
			"export sluice_on_timer is reserved for a later version of the ABI (abi/ABI.md section 11): a version-1 module must not export it",
			"import sluice.timer_set is reserved for a later version of the ABI (abi/ABI.md section 11): this host, of version 1, does not provide it"}},
		{module: "txn_missing_post", kind: KindTransactional, want: []string{
			"missing export sluice_post (i32, i32, i32, i32) -> i32, required by transactional operators"}},
		{module: "memory_import", want: []string{
			"instantiating the module failed: module imports memory env.memory, which the host does not provide"},
			is: []error{runtime.ErrLink}},
	} {
		kind := tc.kind
		if kind == "" {
			kind = KindMap
		}
		t.Run(tc.module+"/"+string(kind), func(t *testing.T) {
			wasm := hostileModule(t, tc.module)
			le := loadError(t, eng, tc.module+".wasm", wasm, kind)
			if len(le.Problems) != len(tc.want) {
				t.Fatalf("problems %q, want %q", le.Problems, tc.want)
			}
			for i, p := range le.Problems {
				// Engine messages may carry a stack trace after the
				// first line.
				if first, _, _ := strings.Cut(p, "\n"); first != tc.want[i] {
					t.Errorf("problem %d = %q, want %q", i, p, tc.want[i])
				}
			}
			for _, target := range tc.is {
				if !errors.Is(le, target) {
					t.Errorf("error does not wrap %v: %v", target, le)
				}
			}
			if !strings.HasPrefix(le.Error(), fmt.Sprintf("plugin %q: ", tc.module+".wasm")) {
				t.Errorf("error %q does not name the plugin", le)
			}
			// Check reports the same problems without failing; for a
			// module of one kind, only that kind's.
			r := mustCheck(context.Background(), t, eng, tc.module+".wasm", wasm)
			if r.OK() || len(r.Problems) == 0 {
				t.Errorf("Check found no problem: %+v", r)
			}
			if kind == KindTransactional && tc.module == "txn_missing_post" && !slices.Equal(r.Problems, tc.want) {
				t.Errorf("Check problems %q, want %q", r.Problems, tc.want)
			}
		})
	}
}

func TestHostileInfiniteLoop(t *testing.T) {
	const timeout = 100 * time.Millisecond
	t.Run("process", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "spin", timeout: timeout})
		before := f.inst.inst
		err := rejectOf(t, f, rec(0, "spin"), abi.ExportProcess)
		if !errors.Is(err, runtime.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want ErrTimeout", err)
		}
		if !strings.Contains(err.Error(), "the call ran past its timeout of 100ms") {
			t.Errorf("error %q does not say the call ran past its deadline", err)
		}
		if f.inst.inst == before {
			t.Error("the instance that timed out was kept")
		}
		echoes(t, f)
		// In a batch (the module spins when record 0 has a key), only the
		// spinning record fails.
		in := []abi.Record{rec(0, "spin"), rec(0, ""), rec(0, "")}
		var out Output
		if err := f.inst.Process(context.Background(), in, nil, &out); err != nil {
			t.Fatal(err)
		}
		if !equal(origins(&out), []uint32{1, 2}) || len(out.Rejects) != 1 || out.Rejects[0].Index != 0 ||
			!errors.Is(out.Rejects[0].Err, runtime.ErrTimeout) {
			t.Errorf("origins %v, rejects %+v: want record 0 rejected for its timeout", origins(&out), out.Rejects)
		}
	})
	t.Run("plan", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "spin", kind: KindTransactional, timeout: timeout})
		err := f.plan(0, "spin")
		txnErrorOf(t, f, err, abi.ExportPlan)
		if !errors.Is(err, runtime.ErrTimeout) {
			t.Errorf("err = %v, want ErrTimeout", err)
		}
		if err := f.plan(0, ""); err != nil {
			t.Errorf("plan after the timeout: %v", err)
		}
	})
	t.Run("apply", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "spin", kind: KindTransactional, timeout: timeout})
		_, err := f.apply(1)
		txnErrorOf(t, f, err, abi.ExportApply)
		if !errors.Is(err, runtime.ErrTimeout) {
			t.Errorf("err = %v, want ErrTimeout", err)
		}
		if eff, err := f.apply(0); err != nil || !eff.Keep {
			t.Errorf("apply after the timeout = %+v, %v; want ApplyKeep", eff, err)
		}
	})
	t.Run("alloc", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "alloc", config: "7", timeout: timeout})
		if err := rejectOf(t, f, rec(0, ""), abi.ExportAlloc); !errors.Is(err, runtime.ErrTimeout) {
			t.Errorf("err = %v, want ErrTimeout", err)
		}
	})
}

func TestHostileMemoryGrowth(t *testing.T) {
	const pages = 16
	f := newHostile(t, hostileConfig{module: "grow", pages: pages})
	err := rejectOf(t, f, rec(0, "grow"), abi.ExportProcess)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.StatusError || se.Reason != "memory.grow failed at the limit" {
		t.Fatalf("err = %v, want the guest's StatusError after memory.grow failed", err)
	}
	// The guest returned normally: its instance stays, at the limit.
	if got := f.inst.mem.Size(); got != pages*65536 {
		t.Errorf("memory is %d bytes after growing to the limit, want %d", got, pages*65536)
	}
	echoes(t, f)
}

// A table grows in host memory, outside the instance's memory limit: a
// guest asking for 2^30 entries must be refused, not make the host
// allocate 8 GiB. wazero bounds table.grow only by 2^32 entries; the
// runtime bounds it at its table limit (runtime.Config.WithTableLimit), so
// table.grow returns -1 and the guest carries on.
func TestHostileTableGrowth(t *testing.T) {
	f := newHostile(t, hostileConfig{module: "tablegrow"})
	var out Output
	if err := f.inst.Process(context.Background(), []abi.Record{rec(0, "grow")}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Rejects) != 0 || len(out.Records) != 1 {
		t.Errorf("rejects %+v: want the table growth refused and the record echoed", out.Rejects)
	}
}

func TestHostileRecursion(t *testing.T) {
	f := newHostile(t, hostileConfig{module: "recurse"})
	before := f.inst.inst
	err := rejectOf(t, f, rec(0, "deep"), abi.ExportProcess)
	if !errors.Is(err, runtime.ErrTrap) || !strings.Contains(err.Error(), "stack overflow") {
		t.Errorf("err = %v, want a stack overflow trap", err)
	}
	if f.inst.inst == before {
		t.Error("the instance that overflowed its stack was kept")
	}
	echoes(t, f)
}

func TestHostileAlloc(t *testing.T) {
	for _, tc := range []struct {
		mode, name string
		is         error
		want       string // in the error
	}{
		{"1", "past memory", ErrAlloc, "returned 0xffff0000, outside memory of 65536 bytes"},
		{"2", "2 GiB", ErrAlloc, "returned 0x80000000, outside memory of 65536 bytes"},
		{"3", "straddles the end", ErrAlloc, "returned 0xfffc, outside memory of 65536 bytes"},
		{"4", "zero", ErrAlloc, "returned 0: guest allocator failed"},
		{"5", "grow by 2 GiB", ErrAlloc, "returned 0: guest allocator failed"},
		{"6", "trap", runtime.ErrTrap, "wasm error: unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostile(t, hostileConfig{module: "alloc", config: tc.mode})
			for range 2 { // and again, on the replacement instance
				err := rejectOf(t, f, rec(0, ""), abi.ExportAlloc)
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want %v: ...%s", err, tc.is, tc.want)
				}
			}
			tf := newHostile(t, hostileConfig{module: "alloc", kind: KindTransactional, config: tc.mode})
			err := tf.plan(0, "")
			txnErrorOf(t, tf, err, abi.ExportAlloc)
			if !errors.Is(err, tc.is) {
				t.Errorf("plan: err = %v, want %v", err, tc.is)
			}
			_, err = tf.apply(0)
			if te := txnErrorOf(t, tf, err, abi.ExportAlloc); te.Event != 0 || te.Op != 0 {
				t.Errorf("apply: error names event %d operation %d, want 0 0", te.Event, te.Op)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("apply: err = %v, want %v", err, tc.is)
			}
		})
	}
}

// The hostcalls module's selectors (see testdata/hostile/hostcalls.wat).
const (
	selEmitOOB uint32 = iota + 1
	selRejectOOB
	selTableIDOOB
	selStateGetKeyOOB
	selStateGetBufOOB
	selStatePutKeyOOB
	selStatePutValOOB
	selStateDeleteOOB
	selLogOOB
	selTxnPlanOOB
	selTxnGetKeyOOB
	selTxnGetBufOOB
	selTxnPutKeyOOB
	selTxnPutValOOB
	selTxnDeleteOOB
	selEmitWrap
	selLogAtEnd
	selLogPastEnd
	selTxnPutWrap
)

const (
	selEmit uint32 = iota + 20
	selReject
	selStatePut
	selTxnPlan
	selTxnGet
	selTxnPut
	selTxnDelete
	selTableID
)

const (
	selResultOOB uint32 = iota + 30
	selResultWrap
)

// phase is the export in which the hostcalls module runs a selector.
type phase string

// hostCallCase is a selector of the hostcalls module run in a phase of an
// operator of a kind, which must fail in host function fn for reason.
type hostCallCase struct {
	fn     string
	sel    uint32
	kind   Kind
	ph     phase
	reason string
}

// hostCall runs selector sel of the hostcalls module in phase ph, on an
// instance of kind, and returns the error of the call.
func hostCall(t *testing.T, kind Kind, ph phase, sel uint32) error {
	t.Helper()
	if ph == abi.ExportConfigure {
		eng := newEngine(t, engineConfig())
		ctx := context.Background()
		p, err := Load(ctx, eng, "hostcalls.wasm", hostileModule(t, "hostcalls"), kind, WithTables([]string{"accounts"}))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close(ctx) }()
		inst, err := p.NewInstance(ctx, fmt.Appendf(nil, "%d", sel))
		if err == nil {
			_ = inst.Close(ctx)
			return nil
		}
		if !strings.HasPrefix(err.Error(), `plugin "hostcalls.wasm": `) || !strings.Contains(err.Error(), `export "sluice_configure"`) {
			t.Errorf("error %q does not name the plugin and sluice_configure", err)
		}
		return err
	}
	f := newHostile(t, hostileConfig{module: "hostcalls", kind: kind})
	err := hostCallOn(t, f, ph, sel)
	if err != nil {
		// The host goes on: the same export works on the next call.
		if err := hostCallOn(t, f, ph, 0); err != nil {
			t.Errorf("%s after the failure: %v", ph, err)
		}
	}
	return err
}

// hostCallOn runs selector sel of the hostcalls module in phase ph on f's
// instance and returns the error of the call.
func hostCallOn(t *testing.T, f *fixture, ph phase, sel uint32) error {
	t.Helper()
	switch ph {
	case abi.ExportProcess:
		var out Output
		if err := f.inst.Process(context.Background(), []abi.Record{rec(sel, "")}, f.st, &out); err != nil {
			t.Fatalf("Process returned %v: a guest's failure must not stop the operator", err)
		}
		if len(out.Rejects) == 0 {
			return nil
		}
		return checkReject(t, f, &out, abi.ExportProcess)
	case abi.ExportPlan:
		if err := f.plan(sel, ""); err != nil {
			txnErrorOf(t, f, err, abi.ExportPlan)
			return err
		}
	case abi.ExportApply:
		if _, err := f.apply(sel); err != nil {
			txnErrorOf(t, f, err, abi.ExportApply)
			return err
		}
	case abi.ExportPost:
		if _, err := f.post(sel, ""); err != nil {
			txnErrorOf(t, f, err, abi.ExportPost)
			return err
		}
	default:
		t.Fatalf("no phase %q", ph)
	}
	return nil
}

func TestHostileOutOfBounds(t *testing.T) {
	const outside = "pointer 0xffff0000 length 8 is outside memory of 65536 bytes"
	for _, tc := range []hostCallCase{
		{abi.FuncEmit, selEmitOOB, KindMap, abi.ExportProcess, "batch " + outside},
		{abi.FuncEmit, selEmitOOB, KindTransactional, abi.ExportPost, "batch " + outside},
		{abi.FuncReject, selRejectOOB, KindMap, abi.ExportProcess, "message " + outside},
		{abi.FuncTableID, selTableIDOOB, KindKeyed, abi.ExportProcess, "name " + outside},
		{abi.FuncTableID, selTableIDOOB, KindTransactional, abi.ExportPlan, "name " + outside},
		{abi.FuncStateGet, selStateGetKeyOOB, KindKeyed, abi.ExportProcess, "key " + outside},
		{abi.FuncStateGet, selStateGetBufOOB, KindKeyed, abi.ExportProcess, "buffer " + outside},
		{abi.FuncStatePut, selStatePutKeyOOB, KindKeyed, abi.ExportProcess, "key " + outside},
		{abi.FuncStatePut, selStatePutValOOB, KindKeyed, abi.ExportProcess, "value " + outside},
		{abi.FuncStateDelete, selStateDeleteOOB, KindKeyed, abi.ExportProcess, "key " + outside},
		{abi.FuncLog, selLogOOB, KindMap, abi.ExportProcess, "message " + outside},
		{abi.FuncLog, selLogOOB, KindTransactional, abi.ExportApply, "message " + outside},
		{abi.FuncTxnPlan, selTxnPlanOOB, KindTransactional, abi.ExportPlan, "declarations " + outside},
		{abi.FuncTxnGet, selTxnGetKeyOOB, KindTransactional, abi.ExportApply, "key " + outside},
		{abi.FuncTxnGet, selTxnGetBufOOB, KindTransactional, abi.ExportApply, "buffer " + outside},
		{abi.FuncTxnPut, selTxnPutKeyOOB, KindTransactional, abi.ExportApply, "key " + outside},
		{abi.FuncTxnPut, selTxnPutValOOB, KindTransactional, abi.ExportApply, "value " + outside},
		{abi.FuncTxnDelete, selTxnDeleteOOB, KindTransactional, abi.ExportApply, "key " + outside},
		{abi.FuncEmit, selEmitWrap, KindMap, abi.ExportProcess,
			"batch pointer 0xfffffff0 + length 32 overflows the 32-bit address space (memory is 65536 bytes)"},
		{abi.FuncTxnPut, selTxnPutWrap, KindTransactional, abi.ExportApply,
			"key pointer 0xfffffff0 + length 32 overflows the 32-bit address space (memory is 65536 bytes)"},
		{abi.FuncLog, selLogPastEnd, KindMap, abi.ExportProcess,
			"message pointer 0x10001 length 0 is outside memory of 65536 bytes"},
	} {
		t.Run(fmt.Sprintf("%s/%d/%s", tc.fn, tc.sel, tc.ph), func(t *testing.T) {
			err := hostCall(t, tc.kind, tc.ph, tc.sel)
			hostErrorOf(t, err, tc.fn, tc.reason)
		})
	}
	t.Run("zero length at the end of memory", func(t *testing.T) {
		if err := hostCall(t, KindMap, abi.ExportProcess, selLogAtEnd); err != nil {
			t.Errorf("log of 0 bytes at the end of memory: %v", err)
		}
	})
}

func TestHostileWrongPhase(t *testing.T) {
	const (
		emitOnly  = "records may be emitted only by sluice_process and sluice_post"
		planOnly  = "operations may be declared only during sluice_plan"
		applyOnly = "a transactional operator reaches state only during sluice_apply"
		txnTables = "called by a transactional operator: its tables are reached through txn_get, txn_put and txn_delete during sluice_apply"
	)
	for _, tc := range []hostCallCase{
		{abi.FuncStatePut, selStatePut, KindMap, abi.ExportProcess, "called by a map operator: only keyed operators have state"},
		{abi.FuncStatePut, selStatePut, KindFilter, abi.ExportProcess, "called by a filter operator: only keyed operators have state"},
		{abi.FuncStatePut, selStatePut, KindKeyed, abi.ExportConfigure, "called during sluice_configure: state is available only during sluice_process"},
		{abi.FuncStatePut, selStatePut, KindTransactional, abi.ExportApply, txnTables},
		{abi.FuncTableID, selTableID, KindMap, abi.ExportProcess, "called by a map operator: only keyed operators have state"},
		{abi.FuncEmit, selEmit, KindKeyed, abi.ExportConfigure, "called during sluice_configure: " + emitOnly},
		{abi.FuncEmit, selEmit, KindTransactional, abi.ExportPlan, "called during sluice_plan: " + emitOnly},
		{abi.FuncEmit, selEmit, KindTransactional, abi.ExportApply, "called during sluice_apply: " + emitOnly},
		{abi.FuncReject, selReject, KindTransactional, abi.ExportApply, "called during sluice_apply: records may be rejected only by sluice_process and sluice_post"},
		{abi.FuncTxnPlan, selTxnPlan, KindKeyed, abi.ExportProcess, "called by a keyed operator: only transactional operators may call it, during sluice_plan"},
		{abi.FuncTxnPlan, selTxnPlan, KindTransactional, abi.ExportConfigure, "called during sluice_configure: " + planOnly},
		{abi.FuncTxnPlan, selTxnPlan, KindTransactional, abi.ExportApply, "called during sluice_apply: " + planOnly},
		{abi.FuncTxnPlan, selTxnPlan, KindTransactional, abi.ExportPost, "called during sluice_post: " + planOnly},
		{abi.FuncTxnGet, selTxnGet, KindKeyed, abi.ExportProcess, "called by a keyed operator: only transactional operators may call it, during sluice_apply"},
		{abi.FuncTxnGet, selTxnGet, KindTransactional, abi.ExportPlan, "called during sluice_plan: " + applyOnly},
		{abi.FuncTxnPut, selTxnPut, KindTransactional, abi.ExportPost, "called during sluice_post: " + applyOnly},
		{abi.FuncTxnDelete, selTxnDelete, KindMap, abi.ExportProcess, "called by a map operator: only transactional operators may call it, during sluice_apply"},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.fn, tc.kind, tc.ph), func(t *testing.T) {
			err := hostCall(t, tc.kind, tc.ph, tc.sel)
			hostErrorOf(t, err, tc.fn, tc.reason)
		})
	}
	// What a phase allows goes through.
	for _, tc := range []struct {
		sel  uint32
		kind Kind
		ph   phase
	}{
		{selTableID, KindTransactional, abi.ExportConfigure},
		{selTableID, KindTransactional, abi.ExportApply},
		{selTxnPlan, KindTransactional, abi.ExportPlan},
		{selStatePut, KindKeyed, abi.ExportProcess},
	} {
		if err := hostCall(t, tc.kind, tc.ph, tc.sel); err != nil {
			t.Errorf("selector %d in %s of a %s operator: %v", tc.sel, tc.ph, tc.kind, err)
		}
	}
}

// The allocator is no phase of the call it serves: a host function that
// emits, rejects, declares or reaches state, called from sluice_alloc,
// traps with an error naming sluice_alloc, whatever export the allocation
// is for.
func TestHostileHostCallInAlloc(t *testing.T) {
	const (
		emitOnly  = "called during sluice_alloc: records may be emitted only by sluice_process and sluice_post"
		stateOnly = "called during sluice_alloc: state is available only during sluice_process"
	)
	for _, tc := range []hostCallCase{
		{abi.FuncEmit, selEmit, KindMap, abi.ExportProcess, emitOnly},
		{abi.FuncReject, selReject, KindFlatMap, abi.ExportProcess, "called during sluice_alloc: records may be rejected only by sluice_process and sluice_post"},
		{abi.FuncStatePut, selStatePut, KindKeyed, abi.ExportProcess, stateOnly},
		{abi.FuncEmit, selEmit, KindTransactional, abi.ExportPost, emitOnly},
		{abi.FuncTxnPlan, selTxnPlan, KindTransactional, abi.ExportPlan, "called during sluice_alloc: operations may be declared only during sluice_plan"},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.fn, tc.kind, tc.ph), func(t *testing.T) {
			f := newHostile(t, hostileConfig{module: "hostcalls", kind: tc.kind, config: fmt.Sprint(100 + tc.sel)})
			var err error
			switch tc.ph {
			case abi.ExportProcess:
				var out Output
				if perr := f.inst.Process(context.Background(), []abi.Record{rec(0, "")}, f.st, &out); perr != nil {
					t.Fatalf("Process returned %v: a guest's failure must not stop the operator", perr)
				}
				if len(out.Rejects) == 0 {
					t.Fatalf("%d records and no reject: %s in sluice_alloc went through", len(out.Records), tc.fn)
				}
				err = checkReject(t, f, &out, abi.ExportAlloc)
			case abi.ExportPlan:
				err = f.plan(0, "")
				txnErrorOf(t, f, err, abi.ExportAlloc)
			case abi.ExportPost:
				_, err = f.post(0, "")
				txnErrorOf(t, f, err, abi.ExportAlloc)
			}
			hostErrorOf(t, err, tc.fn, tc.reason)
			if tc.kind == KindKeyed && len(f.st.data[0]) != 0 {
				t.Errorf("state after the failed call: %v", f.st.data[0])
			}
		})
	}
}

// A deterministic operation writes only through its result: txn_put and
// txn_delete are refused (StatusUndeclared) by the scheduler's own Access,
// and the batch fails with an error naming the plugin, the event, the
// operation and the key, whatever the guest returned next.
func TestHostileTxnWriteFromDeterministicOp(t *testing.T) {
	f := newHostile(t, hostileConfig{module: "hostcalls", kind: KindTransactional})
	s, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	serial, err := txn.ParseStrategy("serial")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	apply := func(event, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		return f.inst.ApplyOp(ctx, event, op, o, a)
	}
	for _, tc := range []struct {
		fn  string
		sel uint32
	}{{abi.FuncTxnPut, selTxnPut}, {abi.FuncTxnDelete, selTxnDelete}} {
		t.Run(tc.fn, func(t *testing.T) {
			batch := []txn.Txn{
				{Ops: []txn.Op{{Fn: 0, Write: txn.Key{Key: "a"}}}},
				{Ops: []txn.Op{{Fn: 0, Write: txn.Key{Key: "b"}}, {Fn: tc.sel, Write: txn.Key{Key: "k"}}}},
			}
			_, err := s.Run(ctx, serial, batch, txn.MapStore{}, apply)
			var oe *txn.OpError
			if !errors.As(err, &oe) || oe.Txn != 1 || oe.Op != 1 {
				t.Fatalf("err = %v, want an *OpError of transaction 1 operation 1", err)
			}
			var te *TxnError
			if !errors.As(err, &te) || te.Event != 1 || te.Op != 1 || te.Export != abi.ExportApply || !errors.Is(err, txn.ErrUndeclared) {
				t.Fatalf("err = %v, want a *TxnError of event 1 operation 1 wrapping txn.ErrUndeclared", err)
			}
			want := fmt.Sprintf(`plugin "hostcalls.wasm" export "sluice_apply": event 1 operation 1: %s refused: `, tc.fn)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `0/"k"`) {
				t.Errorf("error %q does not name plugin, export, event, operation, host function and key", err)
			}
		})
	}
}

func TestHostileApplyResultSlot(t *testing.T) {
	f := newHostile(t, hostileConfig{module: "hostcalls", kind: KindTransactional})
	for _, tc := range []struct {
		sel  uint32
		want string
	}{
		{selResultOOB, "ApplyWrite value at pointer 0xffff0000 length 8 is outside memory of 65536 bytes"},
		{selResultWrap, "ApplyWrite value at pointer 0xfffffff0 length 32 is outside memory of 65536 bytes"},
	} {
		_, err := f.apply(tc.sel)
		txnErrorOf(t, f, err, abi.ExportApply)
		if !errors.Is(err, ErrApplyResult) || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("err = %v, want ErrApplyResult: ...%s", err, tc.want)
		}
	}
	if eff, err := f.apply(0); err != nil || !eff.Keep {
		t.Errorf("apply after the bad results = %+v, %v; want ApplyKeep", eff, err)
	}
}

func TestHostileOutputLimits(t *testing.T) {
	limits := Limits{MaxRecordBytes: 64, MaxOutputBytes: 4096}
	t.Run("record", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "flood", limits: limits})
		r := rec(1, "")
		r.Value = bytes.Repeat([]byte("x"), 100)
		err := rejectOf(t, f, r, abi.ExportProcess)
		hostErrorOf(t, err, abi.FuncEmit, "output record 0 holds 100 bytes (key, value and headers), over the limit of 64 bytes (limits.max_record_bytes)")
	})
	t.Run("call", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "flood", limits: limits})
		// 200 emits of a 37-byte batch of one record, each costing the
		// host its bytes and an abi.Record: 32 fit, the 33rd does not.
		err := rejectOf(t, f, rec(200, ""), abi.ExportProcess)
		hostErrorOf(t, err, abi.FuncEmit, fmt.Sprintf("emitted records take the bytes this call has the host keep to %d, over the limit of 4096 bytes per call", 33*(37+recordBookkeeping)))
		var out Output
		if err := f.inst.Process(context.Background(), []abi.Record{rec(3, "")}, nil, &out); err != nil || len(out.Records) != 3 {
			t.Errorf("under the limits: %d records, %v; want 3", len(out.Records), err)
		}
	})
	t.Run("post", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "flood", kind: KindTransactional, limits: limits})
		out, err := f.post(200, "")
		txnErrorOf(t, f, err, abi.ExportPost)
		hostErrorOf(t, err, abi.FuncEmit, fmt.Sprintf("emitted records take the bytes this call has the host keep to %d, over the limit of 4096 bytes per call", 33*(37+recordBookkeeping)))
		if len(out.Records) != 0 {
			t.Errorf("a failed post left %d records", len(out.Records))
		}
	})
	// What the host allocates for a call's records stays a small multiple
	// of what the limit counts for them: records are not re-allocated in
	// append's small steps.
	t.Run("bookkeeping", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "flood"})
		const emits = 100_000
		var out Output
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		if err := f.inst.Process(context.Background(), []abi.Record{rec(emits, "")}, nil, &out); err != nil || len(out.Records) != emits {
			t.Fatalf("%d records, %v; want %d", len(out.Records), err, emits)
		}
		goruntime.ReadMemStats(&after)
		counted := emits * (37 + recordBookkeeping)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*uint64(counted) {
			t.Errorf("the call allocated %d bytes for %d counted against the limit: over 3 times", alloc, counted)
		}
	})
	// Keyed state writes count against the call's limit with their keys,
	// values and the host's bookkeeping, and one value is bounded.
	t.Run("state writes", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "statefill", kind: KindKeyed, limits: Limits{MaxOutputBytes: 64 << 10}})
		// Puts of 1 KiB: each costs the key, the value and the bookkeeping.
		per := 1 + 1024 + stateWriteBookkeeping
		err := rejectOf(t, f, rec(1000, ""), abi.ExportProcess)
		fits := (64 << 10) / per
		hostErrorOf(t, err, abi.FuncStatePut, fmt.Sprintf("state writes take the bytes this call has the host keep to %d, over the limit of 65536 bytes per call", (fits+1)*per))
		err = rejectOf(t, f, rec(1_000_000, "del"), abi.ExportProcess)
		hostErrorOf(t, err, abi.FuncStateDelete, "state writes take the bytes this call has the host keep to")
		if len(f.st.data[0]) != 0 {
			t.Errorf("state after the failed calls: %d keys", len(f.st.data[0]))
		}
		// Under the limit, the writes go through.
		var out Output
		if err := f.inst.Process(context.Background(), []abi.Record{rec(10, "")}, f.st, &out); err != nil || len(out.Rejects) != 0 {
			t.Fatalf("ten puts: %v, rejects %+v", err, out.Rejects)
		}
		if v := f.st.data[0]["k"]; len(v) != 1024 {
			t.Errorf("after ten puts the value has %d bytes, want 1024", len(v))
		}
	})
	t.Run("state value", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "statefill", kind: KindKeyed})
		err := rejectOf(t, f, rec(MaxStateValueBytes+1, "big"), abi.ExportProcess)
		hostErrorOf(t, err, abi.FuncStatePut, fmt.Sprintf(`table 0 key "k": value of %d bytes is over the limit of %d bytes per state value`, MaxStateValueBytes+1, MaxStateValueBytes))
		var out Output
		if err := f.inst.Process(context.Background(), []abi.Record{rec(MaxStateValueBytes, "big")}, f.st, &out); err != nil || len(out.Rejects) != 0 {
			t.Fatalf("a value of the limit's size: %v, rejects %+v", err, out.Rejects)
		}
	})
	// A record is dead-lettered once, however often the guest rejects it:
	// a guest cannot make the host keep a message per call of reject.
	t.Run("rejects", func(t *testing.T) {
		f := newHostile(t, hostileConfig{module: "flood", limits: limits})
		var out Output
		if err := f.inst.Process(context.Background(), []abi.Record{rec(100_000, "reject")}, nil, &out); err != nil {
			t.Fatal(err)
		}
		if len(out.Rejects) != 1 || !errors.Is(out.Rejects[0].Err, ErrRejected) {
			t.Fatalf("%d rejects of the one record rejected 100000 times, want 1", len(out.Rejects))
		}
		tf := newHostile(t, hostileConfig{module: "flood", kind: KindTransactional, limits: limits})
		out2, err := tf.post(100_000, "reject")
		if err != nil || len(out2.Rejects) != 1 {
			t.Fatalf("post: %d rejects, %v; want 1", len(out2.Rejects), err)
		}
	})
}

// rawModule assembles a module from sections given as id and content.
func rawModule(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s[0])
		out = appendU32(out, uint32(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

// section returns a section's id followed by its content, for rawModule.
func section(id byte, content ...[]byte) []byte {
	return append([]byte{id}, bytes.Join(content, nil)...)
}

// u32s encodes numbers as LEB128.
func u32s(v ...uint32) []byte {
	var b []byte
	for _, x := range v {
		b = appendU32(b, x)
	}
	return b
}

// Modules of a few bytes that declare huge sizes: the engine's decoder
// would allocate what they declare, beyond the host's memory (a fatal
// error, not a panic), so Load and Check refuse them first.
func TestHostileBinaries(t *testing.T) {
	const huge = 1 << 28
	typ := section(1, u32s(1), []byte{0x60, 0, 0})
	fn := section(3, u32s(1, 0))
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"imports", rawModule(section(2, u32s(huge))), "268435456 imports cannot fit in the 0 bytes left"},
		{"parameters", rawModule(section(1, u32s(1), []byte{0x60}, u32s(huge))), "268435456 parameters cannot fit"},
		{"globals", rawModule(section(6, u32s(huge), []byte{0x7f, 0, 0x41, 0, 0x0b})), "268435456 globals cannot fit in the 5 bytes left"},
		{"exports", rawModule(section(7, u32s(huge))), "268435456 exports cannot fit"},
		{"export name", rawModule(section(7, u32s(1, 1<<31))), "export name of 2147483648 bytes runs past the 0 bytes left"},
		{"import name", rawModule(section(2, u32s(1, 0, 0xfffffff0), []byte{0, 0})), "import name of 4294967280 bytes runs past"},
		{"data segment", rawModule(section(11, u32s(1, 1, 0xfffffff0))), "data segment of 4294967280 bytes runs past"},
		{"element expressions", rawModule(section(9, u32s(1, 5), []byte{0x70}, u32s(huge))), "268435456 element expressions cannot fit"},
		{"function indices", rawModule(section(9, u32s(1, 1), []byte{0}, u32s(huge))), "268435456 function indices cannot fit"},
		{"function bodies", rawModule(typ, fn, section(10, u32s(huge))), "268435456 function bodies cannot fit"},
		{"locals", rawModule(typ, fn, section(10, u32s(1, 6, 1, 100_000), []byte{0x7f, 0x0b})), "the function declares over 50000 locals"},
		{"locals in several declarations", rawModule(typ, fn, section(10, u32s(1, 10, 2, 40_000), []byte{0x7f}, u32s(40_000), []byte{0x7e, 0x0b})),
			"the function declares over 50000 locals"},
		{"table", rawModule(section(4, u32s(1), []byte{0x70, 0}, u32s(1<<27))), "a table of 134217728 entries at the start, over the 1048576 the host allows"},
		{"imported table", rawModule(section(2, u32s(1), []byte{0, 0, 1, 0x70, 0}, u32s(1<<27))), "a table of 134217728 entries"},
		{"section size", rawModule(section(1, u32s(1)))[:9] /* the size byte, no content */, "unexpected end"},
		{"section past the end", append(rawModule(), 1, 0x80, 0x80, 0x04, 0), "declares 65536 bytes, but 1 bytes follow"},
		{"custom section name", rawModule(section(0, u32s(0xfffff))), "custom section name of 1048575 bytes runs past"},
		{"function names", rawModule(section(0, u32s(4), []byte("name"), []byte{1}, u32s(5, huge))), "268435456 function names cannot fit"},
		{"local names", rawModule(section(0, u32s(4), []byte("name"), []byte{2}, u32s(7, 1, 0, huge))), "268435456 local names cannot fit"},
		{"long LEB128", rawModule(section(3, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01})), "functions count: integer longer than 32 bits"},
		{"unknown section", rawModule(section(99)), "unknown section id 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := wasmbin.CheckBounds(tc.wasm)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkBounds = %v, want ...%s", err, tc.want)
			}
			eng := newEngine(t, engineConfig())
			le := loadError(t, eng, "huge.wasm", tc.wasm, KindMap)
			if len(le.Problems) != 1 || !strings.HasPrefix(le.Problems[0], "not a valid WebAssembly module: ") ||
				!strings.Contains(le.Problems[0], tc.want) || !errors.Is(le, runtime.ErrCompile) {
				t.Errorf("Load: %v, want a compile error ...%s", le, tc.want)
			}
			if r := mustCheck(context.Background(), t, eng, "huge.wasm", tc.wasm); r.OK() {
				t.Errorf("Check found no problem")
			}
		})
	}
}

// checkBounds refuses no module the engine compiles: every test module of
// wazero's own source tree (spec tests and toolchain outputs: Go, TinyGo,
// Rust, Zig, C, C++) that wazero compiles with its default features.
func TestCheckBoundsAcceptsWazeroCorpus(t *testing.T) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/tetratelabs/wazero").Output()
	if err != nil || len(bytes.TrimSpace(dir)) == 0 {
		t.Skipf("wazero's source is not in the module cache: %v", err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer func() { _ = rt.Close(ctx) }()
	modules, compiled := 0, 0
	err = filepath.WalkDir(string(bytes.TrimSpace(dir)), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".wasm" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		modules++
		cm, err := rt.CompileModule(ctx, b)
		if err != nil {
			return nil // invalid on purpose, or of a feature not enabled
		}
		_ = cm.Close(ctx)
		compiled++
		if err := wasmbin.CheckBounds(b); err != nil {
			t.Errorf("%s: wazero compiles it, checkBounds refuses it: %v", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if compiled < 100 {
		t.Errorf("only %d of %d modules compiled: the corpus is not what this test expects", compiled, modules)
	}
	t.Logf("checkBounds accepts all %d of %d modules that wazero compiles", compiled, modules)
}
