package plugin

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

//go:generate sh testdata/check/build.sh

// checkDir holds the modules of Check's advice tests, as text and as
// wat2wasm made them.
const checkDir = "testdata/check"

// checkModule returns the bytes of testdata/check/name.wasm.
func checkModule(t *testing.T, name string) []byte { return testdataModule(t, checkDir, name) }

// The committed .wasm files are what wat2wasm makes of the .wat files.
func TestCheckModulesUpToDate(t *testing.T) { watUpToDate(t, checkDir) }

// advULEB appends v as unsigned LEB128.
func advULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func advName(b []byte, s string) []byte { return append(advULEB(b, uint64(len(s))), s...) }

// withCustom returns wasm with a custom section appended (a custom section
// may come anywhere).
func withCustom(wasm []byte, name string, body []byte) []byte {
	payload := append(advName(nil, name), body...)
	out := append(bytes.Clone(wasm), 0)
	out = advULEB(out, uint64(len(payload)))
	return append(out, payload...)
}

// withProducers returns wasm with a producers section naming language and
// tool, as LLVM and Go write it; an empty field is left out.
func withProducers(wasm []byte, language, tool string) []byte {
	var body []byte
	fields := 0
	var fb []byte
	for _, f := range [][2]string{{"language", language}, {"processed-by", tool}} {
		if f[1] == "" {
			continue
		}
		fields++
		fb = advName(fb, f[0])
		fb = advULEB(fb, 1)
		fb = advName(fb, f[1])
		fb = advName(fb, "1.0")
	}
	body = advULEB(body, uint64(fields))
	return withCustom(wasm, "producers", append(body, fb...))
}

// problemWith returns the problem of r containing s, or "".
func problemWith(r Report, s string) string {
	for _, p := range r.Problems {
		if strings.Contains(p, s) {
			return p
		}
	}
	return ""
}

// A WASI command is told the reactor flag of the language that built it,
// or of every language when the module does not say.
func TestCheckAdvisesReactor(t *testing.T) {
	eng := newEngine(t, engineConfig())
	cmd := checkModule(t, "command")
	for _, tc := range []struct {
		name     string
		wasm     []byte
		language string
		want     []string // in the problem
		not      []string // not in it
	}{
		{"C", withProducers(cmd, "C99", "clang"), "C", []string{"-mexec-model=reactor"}, []string{"-buildmode", "cdylib"}},
		{"C by its compiler", withProducers(cmd, "", "Debian clang"), "C", []string{"-mexec-model=reactor"}, nil},
		{"C++", withProducers(cmd, "C_plus_plus_14", "clang"), "C++", []string{"-mexec-model=reactor"}, nil},
		{"Rust", withProducers(cmd, "Rust", "rustc"), "Rust", []string{`crate-type = ["cdylib"]`, "wasm32-unknown-unknown"}, []string{"-mexec-model"}},
		{"Go", withProducers(cmd, "Go", "Go cmd/compile"), "Go", []string{"-buildmode=c-shared"}, []string{"-mexec-model"}},
		{"Go by its build id", withCustom(cmd, "go:buildid", []byte("x")), "Go", []string{"-buildmode=c-shared"}, nil},
		{"unknown", cmd, "", []string{"-buildmode=c-shared", "-mexec-model=reactor", "cdylib", "--exportStart"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustCheck(context.Background(), t, eng, "command.wasm", tc.wasm)
			if !r.Command || r.Language != tc.language || len(r.Kinds) != 0 {
				t.Fatalf("Command %v, Language %q, Kinds %v; want a %q command serving nothing", r.Command, r.Language, r.Kinds, tc.language)
			}
			// One problem about the command (and others about the
			// transactional exports the module lacks).
			if n := strings.Count(strings.Join(r.Problems, "\n"), "WASI command"); n != 1 {
				t.Fatalf("problems %q: %d about the command, want 1", r.Problems, n)
			}
			p := problemWith(r, "WASI command")
			if !strings.HasPrefix(p, "module is a WASI command (it exports _start), not a reactor: rebuild it as a reactor; ") {
				t.Errorf("problem %q", p)
			}
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Errorf("problem %q lacks %q", p, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(p, w) {
					t.Errorf("problem %q names %q, which is another language's", p, w)
				}
			}
		})
	}
}

// A module without sluice_alloc is told, once, to link its SDK.
func TestCheckAdvisesSDK(t *testing.T) {
	eng := newEngine(t, engineConfig())
	for _, tc := range []struct {
		language, tool string
		want           string
	}{
		{"C11", "clang", "sdk/c/sluice.c"},
		{"Rust", "rustc", "sdk/rust"},
		{"Go", "", "sdk/go/sluice"},
		{"", "", "sluice plugin build"},
	} {
		r := mustCheck(context.Background(), t, eng, "noalloc.wasm", withProducers(checkModule(t, "noalloc"), tc.language, tc.tool))
		p := problemWith(r, "missing export sluice_alloc")
		if !strings.Contains(p, "the SDK's allocator export is missing: link the SDK, or export sluice_alloc yourself") || !strings.Contains(p, tc.want) {
			t.Errorf("%s: problem %q, want advice naming %q", tc.language, p, tc.want)
		}
		if n := strings.Count(strings.Join(r.Problems, "\n"), "allocator export is missing"); n != 1 {
			t.Errorf("%s: the advice is given %d times: %q", tc.language, n, r.Problems)
		}
	}
}

// An import from a module the host does not provide is told what usually
// puts it there.
func TestCheckAdvisesImports(t *testing.T) {
	eng := newEngine(t, engineConfig())
	r := mustCheck(context.Background(), t, eng, "imports.wasm", checkModule(t, "imports"))
	if r.Language != "AssemblyScript" {
		t.Errorf("Language %q: env.abort(i32, i32, i32, i32) is AssemblyScript's", r.Language)
	}
	for imp, want := range map[string]string{
		"import env.abort ":              "--use abort=",
		"import gojs.runtime.ticks ":     "GOOS=js: build with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared",
		"import wasi_unstable.fd_write ": "wasi_snapshot_preview1",
		"import env.helper ":             "an undefined function: the module calls helper without defining it",
	} {
		p := problemWith(r, imp)
		if p == "" {
			t.Errorf("no problem about %s: %q", imp, r.Problems)
			continue
		}
		if !strings.Contains(p, "is not provided") || !strings.Contains(p, want) {
			t.Errorf("problem %q lacks %q", p, want)
		}
	}
}

// A WebAssembly component is told to build a core module.
func TestCheckAdvisesComponent(t *testing.T) {
	eng := newEngine(t, engineConfig())
	r := mustCheck(context.Background(), t, eng, "c.wasm", []byte("\x00asm\x0d\x00\x01\x00\x00\x00\x00\x00"))
	if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "WebAssembly component") || !strings.Contains(r.Problems[0], "core module") {
		t.Errorf("problems %q", r.Problems)
	}
}

// A good module gets no advice, whatever its producers say.
func TestCheckGoodModuleNoAdvice(t *testing.T) {
	eng := newEngine(t, engineConfig())
	r := mustCheck(context.Background(), t, eng, "reactor.wasm", withProducers(checkModule(t, "reactor"), "Rust", "rustc"))
	if !r.OK() || r.Language != "Rust" || len(r.Kinds) == 0 {
		t.Errorf("report %+v", r)
	}
	r = mustCheck(context.Background(), t, eng, "reactor.wasm", checkModule(t, "reactor"))
	if !r.OK() || r.Language != "" {
		t.Errorf("report %+v", r)
	}
}

// sourceLanguage reads only well-formed section framing: it never panics
// and says nothing about a malformed module.
func TestSourceLanguageMalformed(t *testing.T) {
	good := withProducers(checkModule(t, "reactor"), "Rust", "rustc")
	if got := sourceLanguage(good); got != "Rust" {
		t.Fatalf("sourceLanguage = %q", got)
	}
	for i := range good {
		_ = sourceLanguage(good[:i]) // must not panic
	}
	bad := bytes.Clone(good)
	bad[len(bad)-30] = 0xff // a length deep in the producers section
	_ = sourceLanguage(bad)
	if got := sourceLanguage([]byte("\x00asm\x01\x00\x00\x00\x00\xff\xff\xff\xff\x0f")); got != "" {
		t.Errorf("a custom section longer than the module: %q", got)
	}
}

func FuzzSourceLanguage(f *testing.F) {
	f.Add(withProducers([]byte("\x00asm\x01\x00\x00\x00"), "C99", "clang"))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		_ = sourceLanguage(wasm)
	})
}
