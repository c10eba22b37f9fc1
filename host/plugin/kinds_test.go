package plugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
)

//go:generate sh testdata/kinds/build.sh

// kindsDir holds the modules of the kinds tests, as text and as build.sh
// made them: wat2wasm's output, with a sluice.kinds section appended
// where the text's first line names one.
const kindsDir = "testdata/kinds"

// The committed .wasm files are what build.sh makes of the .wat files.
func TestKindsModulesUpToDate(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	wats, err := filepath.Glob(filepath.Join(kindsDir, "*.wat"))
	if err != nil || len(wats) == 0 {
		t.Fatalf("no .wat files in %s: %v", kindsDir, err)
	}
	for _, w := range wats {
		out := filepath.Join(t.TempDir(), "out.wasm")
		if b, err := exec.Command("wat2wasm", "--debug-names", w, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", w, err, b)
		}
		got, _ := os.ReadFile(out)
		src, _ := os.ReadFile(w)
		if line, _, _ := strings.Cut(string(src), "\n"); strings.HasPrefix(line, ";; sluice.kinds: ") {
			var ks []Kind
			for name := range strings.SplitSeq(strings.TrimPrefix(line, ";; sluice.kinds: "), ",") {
				ks = append(ks, Kind(name))
			}
			got = appendKinds(got, ks)
		}
		have, _ := os.ReadFile(strings.TrimSuffix(w, ".wat") + ".wasm")
		if !bytes.Equal(got, have) {
			t.Errorf("%s.wasm is stale: run go generate ./host/plugin/", strings.TrimSuffix(w, ".wat"))
		}
	}
}

// withKinds returns wasm with a sluice.kinds section holding text.
func withKinds(wasm []byte, text string) []byte {
	return withCustom(wasm, abi.SectionKinds, []byte(text))
}

// batchAndTxn returns the functions of a module that exports what every
// operator kind needs, as a Go plugin does.
func batchAndTxn() []wasmFunc {
	fs := append(reactor(abi.Version), txnReactor(abi.ApplyKeep, "")[2:]...)
	for _, e := range []string{abi.ExportAggAdd, abi.ExportAggMerge, abi.ExportAggFire, abi.ExportWindowFire, abi.ExportJoin} {
		fs = append(fs, wasmFunc{export: e, sig: sig(2, 1), ret: 0})
	}
	return fs
}

// A module that declares its kinds loads as those kinds only: as any
// other, Load refuses it before it sees a record, naming the kind the
// module registers and the kind it was asked to serve.
func TestLoadRefusesUndeclaredKind(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	wasm := testdataModule(t, kindsDir, "map")
	p, err := Load(ctx, eng, "map.wasm", wasm, KindMap)
	if err != nil {
		t.Fatalf("as the kind it declares: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{KindTransactional, KindKeyed, KindFilter, KindFlatMap} {
		le := loadError(t, eng, "map.wasm", wasm, k)
		want := `plugin "map.wasm": registers a map handler (custom section sluice.kinds); the pipeline runs it as ` + string(k) +
			": set the operator's kind to map, or use a plugin that registers a " + string(k) + " handler"
		if le.Error() != want {
			t.Errorf("as %s:\n got  %s\n want %s", k, le.Error(), want)
		}
	}
	// The problems listed with the kinds are the module's as a kind it
	// declares, not those of the kind it was asked to serve.
	batch := withKinds(wasmModule{memory: true, funcs: reactor(abi.Version)}.bytes(), "map,filter,flatmap")
	le := loadError(t, eng, "op.wasm", batch, KindTransactional)
	if len(le.Problems) != 1 || !strings.HasPrefix(le.Problems[0], "registers a handler for map, filter or flatmap operators (custom section sluice.kinds); the pipeline runs it as transactional") {
		t.Errorf("problems = %q", le.Problems)
	}
	broken := withKinds(wasmModule{funcs: reactor(abi.Version)}.bytes(), "keyed")
	le = loadError(t, eng, "op.wasm", broken, KindMap)
	if len(le.Problems) != 2 || !strings.Contains(le.Problems[0], "registers a keyed handler") || !strings.HasPrefix(le.Problems[1], "missing export memory") {
		t.Errorf("problems = %q", le.Problems)
	}
}

// A module without the section, as every module built before it existed,
// loads as every kind whose exports it has.
func TestLoadWithoutKinds(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	wasm := wasmModule{memory: true, funcs: batchAndTxn()}.bytes()
	for _, k := range kinds() {
		p, err := Load(ctx, eng, "op.wasm", wasm, k)
		if err != nil {
			t.Fatalf("as %s: %v", k, err)
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	r := mustCheck(ctx, t, eng, "op.wasm", wasm)
	if !r.OK() || r.KindsDeclared || !slices.Equal(r.Kinds, kinds()) {
		t.Errorf("check: ok %v, declared %v, kinds %v; want every kind, inferred", r.OK(), r.KindsDeclared, r.Kinds)
	}
}

func TestCheckKinds(t *testing.T) {
	eng := newEngine(t, engineConfig())
	batch := wasmModule{memory: true, funcs: reactor(abi.Version)}.bytes()
	both := wasmModule{memory: true, funcs: batchAndTxn()}.bytes()
	for _, tc := range []struct {
		name     string
		wasm     []byte
		kinds    []Kind
		problems []string // each a prefix of a problem, in order
		notes    []string // each a part of a note, in order
	}{
		{"declared", testdataModule(t, kindsDir, "map"), []Kind{KindMap}, nil, nil},
		{"several", withKinds(both, "transactional, keyed"), []Kind{KindKeyed, KindTransactional}, nil, nil},
		{"unknown names ignored", withKinds(both, "keyed,session"), []Kind{KindKeyed}, nil,
			[]string{`custom section sluice.kinds names what this host knows as no operator kind, ignored: "session"`}},
		{"window kinds", withKinds(both, "aggregate,window"), []Kind{KindAggregate, KindWindow}, nil, nil},
		{"aggregate without its exports", withKinds(batch, "aggregate"), nil,
			[]string{"missing export sluice_agg_add", "missing export sluice_agg_merge", "missing export sluice_agg_fire"}, nil},
		{"declared without exports", withKinds(batch, "map,transactional"), []Kind{KindMap}, nil,
			[]string{"declares transactional, but the module lacks the exports of transactional operators"}},
		{"only kinds without exports", withKinds(batch, "transactional"), nil,
			[]string{"missing export sluice_plan", "missing export sluice_apply", "missing export sluice_post"}, nil},
		{"no known kind", withKinds(both, "mpa"), nil,
			[]string{`custom section sluice.kinds names no operator kind this host knows ("mpa"): want map, filter, flatmap, keyed, transactional, aggregate, window or join`}, nil},
		{"empty", withKinds(both, " , "), nil, []string{"custom section sluice.kinds is empty"}, nil},
		{"twice", withKinds(withKinds(both, "map"), "map"), nil, []string{"the module has 2 sluice.kinds custom sections"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustCheck(context.Background(), t, eng, "op.wasm", tc.wasm)
			if !r.KindsDeclared || !slices.Equal(r.Kinds, tc.kinds) {
				t.Errorf("declared %v, kinds %v; want declared %v", r.KindsDeclared, r.Kinds, tc.kinds)
			}
			if len(r.Problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %d", r.Problems, len(tc.problems))
			}
			for i, p := range tc.problems {
				if !strings.HasPrefix(r.Problems[i], p) {
					t.Errorf("problem %d = %q, want it to begin %q", i, r.Problems[i], p)
				}
			}
			if len(r.Notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d", r.Notes, len(tc.notes))
			}
			for i, n := range tc.notes {
				if !strings.Contains(r.Notes[i], n) {
					t.Errorf("note %d = %q, want it to contain %q", i, r.Notes[i], n)
				}
			}
			// Load agrees with the report, kind by kind.
			for _, k := range kinds() {
				p, err := Load(context.Background(), eng, "op.wasm", tc.wasm, k)
				if err == nil {
					_ = p.Close(context.Background())
				}
				if (err == nil) != slices.Contains(r.Kinds, k) {
					t.Errorf("as %s: Load error %v, check says it serves %v", k, err, r.Kinds)
				}
			}
		})
	}
}

func TestDeclareKinds(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	reports := func(ret int32) []byte {
		return wasmModule{memory: true, funcs: append(batchAndTxn(), wasmFunc{export: abi.ExportKinds, sig: sig(0, 1), ret: ret})}.bytes()
	}
	wasm := reports(abi.KindBitFlatMap | abi.KindBitFilter)
	out, ks, err := DeclareKinds(ctx, eng, "op.wasm", wasm)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ks, []Kind{KindFilter, KindFlatMap}) || !bytes.Equal(out, withKinds(wasm, "filter,flatmap")) {
		t.Errorf("kinds %v, module %q; want filter and flatmap declared in a section appended", ks, out[len(wasm):])
	}
	if r := mustCheck(ctx, t, eng, "op.wasm", out); !r.OK() || !r.KindsDeclared || !slices.Equal(r.Kinds, ks) {
		t.Errorf("check of the module declared: ok %v, declared %v, kinds %v", r.OK(), r.KindsDeclared, r.Kinds)
	}
	// Unchanged: a module that declares its kinds already, one without
	// sluice_kinds, one Load would refuse as any kind.
	for name, wasm := range map[string][]byte{
		"declared":         withKinds(reports(abi.KindBitMap), "keyed"),
		"no sluice_kinds":  wasmModule{memory: true, funcs: batchAndTxn()}.bytes(),
		"not WebAssembly":  []byte("\x00asm\x02"),
		"wrong signature":  wasmModule{memory: true, funcs: append(reactor(abi.Version), wasmFunc{export: abi.ExportKinds, sig: sig(1, 1)})}.bytes(),
		"foreign import":   wasmModule{memory: true, funcs: reactor(abi.Version), imports: []wasmImport{{"env", "f", sig(0, 0)}}}.bytes(),
		"unknown bits too": withKinds(reports(1<<20), "map"),
	} {
		out, ks, err := DeclareKinds(ctx, eng, "op.wasm", wasm)
		if err != nil || ks != nil || !bytes.Equal(out, wasm) {
			t.Errorf("%s: kinds %v, error %v, module changed %v; want it unchanged", name, ks, err, !bytes.Equal(out, wasm))
		}
	}
	// A plugin that registers no usable handler: the SDK's reason, or
	// what sluice_kinds returned.
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"logged", testdataModule(t, kindsDir, "nohandler"), `plugin "op.wasm": no handler registered: register one`},
		{"silent", reports(1 << 20), `plugin "op.wasm": registers no usable handler: sluice_kinds returned 1048576, which names no operator kind`},
	} {
		_, _, err := DeclareKinds(ctx, eng, "op.wasm", tc.wasm)
		var le *LoadError
		if !errors.As(err, &le) || err.Error() != tc.want {
			t.Errorf("%s: error %v, want a *LoadError %q", tc.name, err, tc.want)
		}
	}
}
