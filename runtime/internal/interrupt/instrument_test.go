package interrupt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The test modules are testdata/*.wat, compiled to the .wasm beside them
// (go generate). Each carries its own expectations in comments:
//
//	;; call NAME ARG... -> RESULT...   both the module and its instrumented
//	                                   copy return RESULT...
//	;; spin NAME ARG...                NAME never returns by itself; the
//	                                   instrumented copy stops when the flag
//	                                   is raised, before the call or during it

type directive struct {
	kind    string // "call" or "spin"
	export  string
	args    []int64
	results []int64
}

func parseDirectives(t *testing.T, wat string) []directive {
	t.Helper()
	var out []directive
	sc := bufio.NewScanner(strings.NewReader(wat))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, ";; ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 2 || (fields[0] != "call" && fields[0] != "spin") {
			continue
		}
		d := directive{kind: fields[0], export: fields[1]}
		target := &d.args
		for _, f := range fields[2:] {
			if f == "->" {
				target = &d.results
				continue
			}
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("directive %q: %v", line, err)
			}
			*target = append(*target, v)
		}
		out = append(out, d)
	}
	return out
}

// harness runs modules on one wazero runtime that also closes modules when
// a call's context is done: a safety net, so that a check that does not
// work fails the test (with wazero's exit error) rather than hanging it.
type harness struct {
	t   *testing.T
	rt  wazero.Runtime
	seq int
}

func newHarness(t *testing.T) *harness {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	env, err := os.ReadFile("testdata/env.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, rt: rt}
}

func (h *harness) compile(wasm []byte) wazero.CompiledModule {
	h.t.Helper()
	cm, err := h.rt.CompileModule(context.Background(), wasm)
	if err != nil {
		h.t.Fatalf("CompileModule: %v", err)
	}
	return cm
}

func (h *harness) instantiate(cm wazero.CompiledModule) api.Module {
	h.t.Helper()
	h.seq++
	mod, err := h.rt.InstantiateModule(context.Background(), cm,
		wazero.NewModuleConfig().WithName(fmt.Sprintf("m%d", h.seq)).WithStartFunctions())
	if err != nil {
		h.t.Fatalf("InstantiateModule: %v", err)
	}
	return mod
}

// instrumented instantiates an instrumented module and runs its moved start
// function, as an embedder must.
func (h *harness) instrumented(cm wazero.CompiledModule, res Result) (api.Module, api.MutableGlobal) {
	h.t.Helper()
	mod := h.instantiate(cm)
	g, ok := mod.ExportedGlobal(FlagExport).(api.MutableGlobal)
	if !ok {
		h.t.Fatalf("no mutable global exported as %q", FlagExport)
	}
	if g.Type() != api.ValueTypeI32 || g.Get() != 0 {
		h.t.Fatalf("flag is %v = %d, want an i32 = 0", g.Type(), g.Get())
	}
	if res.Start {
		if _, err := mod.ExportedFunction(StartExport).Call(context.Background()); err != nil {
			h.t.Fatalf("start: %v", err)
		}
	}
	return mod, g
}

func call(ctx context.Context, mod api.Module, d directive) ([]uint64, error) {
	f := mod.ExportedFunction(d.export)
	if f == nil {
		return nil, fmt.Errorf("no export %q", d.export)
	}
	params := make([]uint64, len(d.args))
	for i, a := range d.args {
		params[i] = uint64(a)
		if f.Definition().ParamTypes()[i] == api.ValueTypeI32 {
			params[i] = uint64(uint32(a))
		}
	}
	return f.Call(ctx, params...)
}

// normalize turns results into int64s, sign-extending i32s.
func normalize(f api.Function, res []uint64) []int64 {
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = int64(r)
		if f.Definition().ResultTypes()[i] == api.ValueTypeI32 {
			out[i] = int64(int32(uint32(r)))
		}
	}
	return out
}

// isUnreachable reports whether err is the trap of an unreachable
// instruction.
func isUnreachable(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "wasm error: unreachable")
}

func TestModules(t *testing.T) {
	wats, err := filepath.Glob("testdata/*.wat")
	if err != nil || len(wats) == 0 {
		t.Fatalf("no test modules (%v)", err)
	}
	for _, watPath := range wats {
		name := strings.TrimSuffix(filepath.Base(watPath), ".wat")
		t.Run(name, func(t *testing.T) {
			wat, err := os.ReadFile(watPath)
			if err != nil {
				t.Fatal(err)
			}
			wasm, err := os.ReadFile(strings.TrimSuffix(watPath, ".wat") + ".wasm")
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			orig := h.compile(wasm)
			for _, opts := range []Options{{Deadline: true}, {Deadline: true, ThreadJumps: true}, {ThreadJumps: true}} {
				om := h.instantiate(orig) // fresh: some exports change the module's state
				res, err := InstrumentWith(wasm, opts)
				if err != nil {
					t.Fatalf("%+v: %v", opts, err)
				}
				inst := h.compile(res.Wasm)
				if !opts.Deadline {
					// The jumps alone: the module as it was, but for its
					// branches.
					im := h.instantiate(inst)
					for _, d := range parseDirectives(t, string(wat)) {
						if d.kind == "call" {
							h.checkCall(om, im, d)
						}
					}
					continue
				}
				if _, ok := inst.ExportedFunctions()[StartExport]; ok != res.Start {
					t.Errorf("export %q present = %v, Result.Start = %v", StartExport, ok, res.Start)
				}
				im, _ := h.instrumented(inst, res)
				for _, d := range parseDirectives(t, string(wat)) {
					switch d.kind {
					case "call":
						h.checkCall(om, im, d)
					case "spin":
						h.checkSpin(inst, res, d)
					}
				}
			}
		})
	}
}

func (h *harness) checkCall(orig, inst api.Module, d directive) {
	t := h.t
	t.Helper()
	ctx := context.Background()
	want, err := call(ctx, orig, d)
	if err != nil {
		t.Errorf("%s%v on the original: %v", d.export, d.args, err)
		return
	}
	got, err := call(ctx, inst, d)
	if err != nil {
		t.Errorf("%s%v instrumented: %v", d.export, d.args, err)
		return
	}
	f := orig.ExportedFunction(d.export)
	if w := normalize(f, want); !slices.Equal(w, d.results) {
		t.Errorf("%s%v = %v on the original, the test expects %v", d.export, d.args, w, d.results)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s%v = %v instrumented, %v on the original", d.export, d.args, got, want)
	}
}

// checkSpin calls a non-terminating export on two fresh instances: one whose
// flag is raised before the call, one whose flag another goroutine raises
// while it runs. Both must trap with unreachable.
func (h *harness) checkSpin(cm wazero.CompiledModule, res Result, d directive) {
	t := h.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	mod, flag := h.instrumented(cm, res)
	flag.Set(1)
	if _, err := call(ctx, mod, d); !isUnreachable(err) {
		t.Errorf("%s%v with the flag raised: %v, want an unreachable trap", d.export, d.args, err)
	}

	mod, flag = h.instrumented(cm, res)
	go func() {
		time.Sleep(10 * time.Millisecond) // let it run; raising the flag before the call is fine too
		flag.Set(1)
	}()
	if _, err := call(ctx, mod, d); !isUnreachable(err) {
		t.Errorf("%s%v with the flag raised while it runs: %v, want an unreachable trap", d.export, d.args, err)
	}
}

// The checks inserted in control.wat, counted by hand: one per loop; one
// at the entry of fib, calls_leaf and recurse, which call without a loop
// first; a seed in spin_calls, which opens with its loop.
func TestCheckCounts(t *testing.T) {
	wasm, err := os.ReadFile("testdata/control.wasm")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	// After the imported $seven and the defined $started and $counter; the
	// module has no tables.
	if res.Flag != 3 || res.Calls != 4 || res.Table != 0 {
		t.Errorf("Flag, Calls, Table = %d, %d, %d, want 3, 4, 0", res.Flag, res.Calls, res.Table)
	}
	// loop_params and spin_params have parameters, and are checked inline.
	if res.LoopChecks != 11 || res.WrappedLoops != 9 || res.EntryChecks != 3 || res.Seeds != 1 {
		t.Errorf("LoopChecks = %d, WrappedLoops = %d, EntryChecks = %d, Seeds = %d, want 11, 9, 3 and 1",
			res.LoopChecks, res.WrappedLoops, res.EntryChecks, res.Seeds)
	}
	if !res.Start {
		t.Error("the start section was not moved")
	}
	if !bytes.Contains(res.Wasm, []byte("\x04name")) {
		t.Error("the name section was dropped")
	}
}

// Where the checks go, on small bodies: every loop; the entry of every
// function that calls, as a seed of the loop count when a loop comes
// first, else as a check.
func TestRewriteBody(t *testing.T) {
	const call0, loop, block, end, brIf0, i32c0, drop = "\x10\x00", "\x03\x40", "\x02\x40", "\x0b", "\x0d\x00", "\x41\x00", "\x1a"
	for _, tc := range []struct {
		name           string
		body           string // instructions, without locals
		loops, wrapped int
		entry, seed    bool
	}{
		{"empty", end, 0, 0, false, false},
		{"leaf", i32c0 + drop + end, 0, 0, false, false},
		{"call", call0 + end, 0, 0, true, false},
		{"loop then call", loop + call0 + end + end, 1, 1, false, true},
		{"call then loop", call0 + loop + end + end, 1, 1, false, true},
		{"blocks then loop", block + block + loop + call0 + end + end + end + end, 1, 1, false, true},
		{"branch before loop", i32c0 + brIf0 + loop + end + call0 + end, 1, 1, true, false},
		{"if around loop", i32c0 + "\x04\x40" + loop + end + end + call0 + end, 1, 1, true, false},
		{"loop without calls", block + loop + i32c0 + brIf0 + end + end + end, 1, 1, false, false},
		{"loop with a result", "\x03\x7f" + i32c0 + end + drop + end, 1, 1, false, false},
		{"loop with a type index", "\x03\x00" + end + end, 1, 0, false, false},
		{"call_indirect", i32c0 + "\x11\x00\x00" + end, 0, 0, true, false},
		{"two loops", loop + end + loop + end + end, 2, 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := append([]byte{0x00}, tc.body...) // no locals
			_, _, st, err := rewriteBody(nil, body, 0, 0, newCode(globals{}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.loops != tc.loops || st.wrapped != tc.wrapped || st.entry != tc.entry || st.seed != tc.seed {
				t.Errorf("loops = %d, wrapped = %d, entry = %v, seed = %v, want %d, %d, %v, %v",
					st.loops, st.wrapped, st.entry, st.seed, tc.loops, tc.wrapped, tc.entry, tc.seed)
			}
		})
	}
}

// module returns a module of one function () -> () with the given body
// (instructions, without locals and the final end) and the given extra
// sections appended.
func module(body []byte, extra ...[]byte) []byte {
	out := slices.Clone(header)
	out = append(out, 1, 4, 1, 0x60, 0, 0) // type section: () -> ()
	out = append(out, 3, 2, 1, 0)          // function section
	code := append(append([]byte{0x00}, body...), opEnd)
	content := appendULEB([]byte{1}, uint64(len(code)))
	content = append(content, code...)
	out = append(out, secCode)
	out = appendULEB(out, uint64(len(content)))
	out = append(out, content...)
	for _, e := range extra {
		out = append(out, e...)
	}
	return out
}

func customSection(name string, data string) []byte {
	content := append(appendName(nil, name), data...)
	return append(appendULEB([]byte{secCustom}, uint64(len(content))), content...)
}

func TestRefused(t *testing.T) {
	exportNamed := func(name string) []byte {
		content := appendName([]byte{1}, name)
		content = append(content, 0x00, 0x00) // function 0
		return append(appendULEB([]byte{secExport}, uint64(len(content))), content...)
	}
	withExport := func(name string) []byte {
		// The export section goes before the code section.
		m := module(nil)
		codeAt := bytes.IndexByte(m[len(header)+10:], secCode) + len(header) + 10
		return slices.Concat(m[:codeAt], exportNamed(name), m[codeAt:])
	}
	for _, tc := range []struct {
		name string
		wasm []byte
		want error
	}{
		{"not wasm", []byte("hello, world"), ErrMalformed},
		{"version 2", append([]byte("\x00asm\x02\x00\x00\x00"), 0), ErrUnsupported},
		{"truncated section", module(nil)[:len(header)+3], ErrMalformed},
		{"unknown section", append(module(nil), 14, 0), ErrMalformed},
		{"sections out of order", append(module(nil), 1, 1, 0), ErrMalformed},
		{"flag name taken", withExport(FlagExport), ErrUnsupported},
		{"start name taken", withExport(StartExport), ErrUnsupported},
		{"no final end", module([]byte{opBlock, blockEmpty})[:len(module(nil))+1], ErrMalformed},
		{"bytes after the end", module([]byte{opEnd, 0x01}), ErrMalformed},
		{"try_table", module([]byte{0x1f, blockEmpty, 0x00, opEnd}), ErrUnsupported},
		{"throw", module([]byte{0x08, 0x00}), ErrUnsupported},
		{"return_call", module([]byte{0x12, 0x00}), ErrUnsupported},
		{"call_ref", module([]byte{0x14, 0x00}), ErrUnsupported},
		{"gc", module([]byte{0xfb, 0x00}), ErrUnsupported},
		{"simd gap", module([]byte{0xfd, 0x9a, 0x01}), ErrUnsupported},
		{"relaxed simd", module([]byte{0xfd, 0x80, 0x02}), ErrUnsupported},
		{"misc unknown", module([]byte{0xfc, 0x12}), ErrUnsupported},
		{"atomic unknown", module([]byte{0xfe, 0x04}), ErrUnsupported},
		{"negative block type", module([]byte{opBlock, 0x60, opEnd}), ErrUnsupported},
		{"typed local", slices.Concat(header, []byte{1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 6, 1, 4, 1, 1, 0x63, 0x0b}), ErrUnsupported},
		{"long integer", module([]byte{opI32Const, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), ErrMalformed},
		{"overlong u32", module([]byte{opBr, 0xff, 0xff, 0xff, 0xff, 0x7f}), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Instrument(tc.wasm)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// Sections the instrumenter adds land where the format wants them, the
// DWARF sections go, the other custom sections stay.
func TestSections(t *testing.T) {
	wasm := module([]byte{opLoop, blockEmpty, opBr, 0, opEnd},
		customSection(".debug_info", "\x01\x02"), customSection("producers", "\x00"), customSection(".debug_line", ""))
	res, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.DroppedSections, []string{".debug_info", ".debug_line"}) {
		t.Errorf("DroppedSections = %q", res.DroppedSections)
	}
	if bytes.Contains(res.Wasm, []byte(".debug_")) || !bytes.Contains(res.Wasm, []byte("producers")) {
		t.Error("the wrong custom sections were kept")
	}
	ids, err := sectionIDs(res.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{secType, secFunction, secTable, secGlobal, secExport, secCode, secCustom}; !bytes.Equal(ids, want) {
		t.Errorf("sections %v, want %v", ids, want)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.CompileModule(ctx, res.Wasm); err != nil {
		t.Errorf("CompileModule: %v", err)
	}
}

func sectionIDs(wasm []byte) ([]byte, error) {
	sections, err := splitSections(wasm)
	var ids []byte
	for _, s := range sections {
		ids = append(ids, s.id)
	}
	return ids, err
}

// Every prefix of a module is refused or instrumented, never a panic, and
// errors wrap one of the two sentinels.
func TestTruncated(t *testing.T) {
	wasm, err := os.ReadFile("testdata/features.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(wasm) {
		_, err := Instrument(wasm[:n])
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("prefix of %d bytes: %v wraps neither sentinel", n, err)
		}
	}
}

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		bits uint
		want uint64
		ok   bool
	}{
		{[]byte{0x00}, 32, 0, true},
		{[]byte{0xe5, 0x8e, 0x26}, 32, 624485, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, 0xffffffff, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 32, 0, false}, // 33 bits
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 32, 0, false},
		{[]byte{0x80}, 32, 0, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 64, 1<<64 - 1, true},
	} {
		r := &reader{B: tc.in}
		got, err := r.ULEB(tc.bits)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("uleb(%x, %d) = %d, %v", tc.in, tc.bits, got, err)
		}
	}
	for _, tc := range []struct {
		in   []byte
		want int64
	}{
		{[]byte{0x7f}, -1},
		{[]byte{0x40}, -64},
		{[]byte{0x3f}, 63},
		{[]byte{0xc0, 0xbb, 0x78}, -123456},
	} {
		r := &reader{B: tc.in}
		if got, err := r.SLEB(33); err != nil || got != tc.want {
			t.Errorf("sleb(%x) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
	for _, v := range []uint64{0, 1, 127, 128, 624485, 1<<32 - 1, 1<<64 - 1} {
		r := &reader{B: appendULEB(nil, v)}
		if got, err := r.ULEB(64); err != nil || got != v || !r.Done() {
			t.Errorf("appendULEB(%d) reads back as %d, %v", v, got, err)
		}
	}
}

// The committed .wasm files are what wat2wasm makes of the .wat files.
func TestTestdataUpToDate(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	wats, _ := filepath.Glob("testdata/*.wat")
	for _, w := range wats {
		out := filepath.Join(t.TempDir(), "out.wasm")
		if b, err := exec.Command("wat2wasm", "--debug-names", w, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", w, err, b)
		}
		got, _ := os.ReadFile(out)
		have, _ := os.ReadFile(strings.TrimSuffix(w, ".wat") + ".wasm")
		if !bytes.Equal(got, have) {
			t.Errorf("%s is stale: run go generate ./runtime/internal/interrupt/", strings.TrimSuffix(w, ".wat")+".wasm")
		}
	}
}

// A spinning instrumented guest yields to the Go scheduler every Interval
// checks, so a stop-the-world (runtime.GC needs two) completes while it
// spins. Compiled code cannot be preempted otherwise: without the yield,
// runtime.GC would wait for the guest forever, and so would this test. The
// runtime does not close modules on context done here, as that mechanism
// leaves the compiled code at every loop header and would hide a missing
// yield.
func TestSpinningGuestLetsTheWorldStop(t *testing.T) {
	wasm, err := os.ReadFile("testdata/noglobals.wasm")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Instrument(wasm)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, res.Wasm, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	flag := mod.ExportedGlobal(FlagExport).(api.MutableGlobal)
	errc := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(ctx)
		errc <- err
	}()
	for range 3 {
		runtime.GC()
	}
	flag.Set(1)
	if err := <-errc; !isUnreachable(err) {
		t.Errorf("spin: %v, want an unreachable trap", err)
	}
}
