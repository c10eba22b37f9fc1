package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/wasmbin"
)

// Report is what Check found out about a module, for `sluice plugin check`.
type Report struct {
	Name       string
	Size       int                // bytes
	SHA256     string             // hex digest of the module's bytes
	Memory     bool               // whether it exports its memory as "memory"
	Exports    []runtime.FuncInfo // exported functions with their signatures
	Imports    []runtime.FuncInfo // imported functions with their signatures
	ABIVersion int32              // the version the module declares; 0 when it could not be read
	Command    bool               // a WASI command module (exports _start) rather than a reactor
	Language   string             // the source language its custom sections name: "Go", "C", "Rust"...; "" if unknown
	// Kinds are the operator kinds the module can serve: Load accepts it
	// as an operator of each. Those its sluice.kinds custom section
	// declares (ABI.md section 12) when it has one, as KindsDeclared
	// says; else every kind whose exports it has.
	Kinds         []Kind
	KindsDeclared bool     // whether the module declares its kinds (sluice.kinds)
	Notes         []string // observations that are not problems
	Problems      []string // why Load would refuse it; empty for a good module
}

// OK reports whether the module has no problems.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check inspects wasm as Load does and reports what it found. A module that
// is not WebAssembly, or that Load would refuse, gets a Report whose
// Problems say why; Check fails only when the host does, not the module: a
// compilation cache that eng cannot read or write (runtime.ErrCache).
// Guest log messages during the check are discarded.
//
// The kinds a module serves (Report.Kinds) are those its sluice.kinds
// custom section declares, when it has one (Report.KindsDeclared), as Load
// refuses it as an operator of any other kind; otherwise they are inferred
// from its exports, as before the section existed: a module built with an
// SDK exports what every kind of its family needs, whatever handler it
// registers.
//
// A module built for the wrong target gets problems that say what to change
// in its build, in the terms of its source language where its custom
// sections name it (Report.Language): a WASI command is told its
// language's reactor flag (-buildmode=c-shared for Go,
// -mexec-model=reactor for clang, a cdylib for Rust); a module without
// sluice_alloc, to link the SDK; an import from a module the host does not
// provide, what usually puts it there (GOOS=js, wasm-bindgen, an undefined
// C function, AssemblyScript's abort); a WebAssembly component, to build a
// core module.
func Check(ctx context.Context, eng runtime.Engine, name string, wasm []byte) (Report, error) {
	sum := sha256.Sum256(wasm)
	d := declaredKinds(wasm)
	r := Report{Name: name, Size: len(wasm), SHA256: hex.EncodeToString(sum[:]), Language: sourceLanguage(wasm), KindsDeclared: d.declared()}
	mod, err := compile(ctx, eng, name, wasm)
	var lerr *LoadError
	switch {
	case errors.As(err, &lerr):
		r.Problems = lerr.Problems
		if isComponent(wasm) {
			r.Problems = []string{componentProblem}
		}
		return r, nil
	case err != nil:
		return r, err
	}
	defer func() { _ = mod.Close(context.WithoutCancel(ctx)) }()
	s := inspect(mod, "map, filter, flatmap and keyed operators")
	st := inspectKind(mod, KindTransactional, "transactional operators")
	sa := inspectKind(mod, KindAggregate, "aggregate operators")
	sw := inspectKind(mod, KindWindow, "window operators")
	sj := inspectKind(mod, KindJoin, "join operators")
	fam := families{s, st, sa, sw, sj}
	if s.instantiable {
		c := &call{plugin: name, limits: DefaultLimits(), logger: slog.New(slog.DiscardHandler)}
		v, _, err := loadABI(ctx, mod, c, s.exportsFeatures())
		for _, f := range fam {
			f.version(v, err)
		}
	}
	r.Memory, r.Exports, r.Imports, r.Command, r.ABIVersion = s.memory, s.exports, s.imports, s.command, s.abiVersion
	// A module serves the batch kinds, the transactional kind, or both,
	// as far as its exports go; its declaration, when it has one, narrows
	// them down. It has problems only when it serves none.
	var served []Kind
	if len(s.problems) == 0 {
		served = []Kind{KindMap, KindFilter, KindFlatMap, KindKeyed}
	}
	if len(st.problems) == 0 {
		served = append(served, KindTransactional)
	}
	if len(sa.problems) == 0 {
		served = append(served, KindAggregate)
	}
	if len(sw.problems) == 0 {
		served = append(served, KindWindow)
	}
	if len(sj.problems) == 0 {
		served = append(served, KindJoin)
	}
	if !d.declared() {
		r.Kinds = served
		if len(r.Kinds) == 0 {
			r.Problems = kindProblems(fam)
		}
		if exports(s, abi.ExportKinds) {
			r.Notes = append(r.Notes, fmt.Sprintf("the module exports %s but has no %s custom section, so the host cannot tell which kinds its handler serves: "+
				"build it with `sluice plugin build`, which writes the section, and a pipeline that runs it as another kind is refused when it loads",
				abi.ExportKinds, abi.SectionKinds))
		}
	} else {
		r.Kinds = declaredServed(&d, served)
		switch p := d.problem(); {
		case p != "":
			r.Kinds = nil
			r.Problems = []string{p}
		case len(r.Kinds) == 0:
			r.Problems = declaredProblems(&d, fam)
		}
		r.Notes = append(r.Notes, declarationNotes(&d, r.Kinds)...)
	}
	if len(r.Kinds) == 0 {
		if r.Language == "" && importsASAbort(s.imports) {
			r.Language = langAssemblyScript
		}
		r.Problems = advise(r.Problems, r.Language, s)
	}
	stateless := func(k Kind) bool { return !k.Stateful() && k.batch() }
	if len(s.usesState) > 0 && (!d.declared() || slices.ContainsFunc(r.Kinds, stateless)) {
		r.Notes = append(r.Notes, fmt.Sprintf("imports %s: serving a map, filter or flatmap operator, any call to them fails the record; only keyed operators have state",
			strings.Join(s.usesState, ", ")))
	}
	return r, nil
}

// exports reports whether a module of shape s exports a function name.
func exports(s *shape, name string) bool {
	return slices.ContainsFunc(s.exports, func(e runtime.FuncInfo) bool { return e.Name == name })
}

// declaredServed returns the kinds d declares that a module serving the
// kinds served by its exports can serve.
func declaredServed(d *declaration, served []Kind) []Kind {
	var ks []Kind
	for _, k := range d.kinds {
		if slices.Contains(served, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// declaredProblems returns the problems of a module that declares d and
// serves none of its kinds, given its shapes as each family of kinds:
// those of the kinds it declares.
func declaredProblems(d *declaration, fam families) []string {
	var meant [nFamilies]bool
	for _, k := range d.kinds {
		meant[familyOf(k)] = true
	}
	return problemsOf(meant, fam)
}

// The families of operator kinds that share their exports: the batch
// kinds (map, filter, flatmap, keyed), transactional, aggregate, window
// and join.
const (
	famBatch = iota
	famTxn
	famAggregate
	famWindow
	famJoin
	nFamilies
)

// families are a module's shapes as each family of kinds, by fam*.
type families [nFamilies]*shape

// familyOf returns the family of k.
func familyOf(k Kind) int {
	switch k {
	case KindTransactional:
		return famTxn
	case KindAggregate:
		return famAggregate
	case KindWindow:
		return famWindow
	case KindJoin:
		return famJoin
	}
	return famBatch
}

// declarationNotes returns the notes on a module's declaration d, of which
// it serves the kinds served: names that are no kind, and kinds it
// declares without their exports.
func declarationNotes(d *declaration, served []Kind) []string {
	var notes []string
	if len(d.unknown) > 0 && len(d.kinds) > 0 {
		notes = append(notes, fmt.Sprintf("custom section %s names what this host knows as no operator kind, ignored: %s",
			abi.SectionKinds, strings.Join(d.unknown, ", ")))
	}
	if len(served) > 0 {
		var lacking []Kind
		for _, k := range d.kinds {
			if !slices.Contains(served, k) {
				lacking = append(lacking, k)
			}
		}
		if len(lacking) > 0 {
			notes = append(notes, fmt.Sprintf("custom section %s declares %s, but the module lacks the exports of %s operators: the host refuses to run it as one",
				abi.SectionKinds, orList(lacking), orList(lacking)))
		}
	}
	return notes
}

// kindProblems returns the problems of a module that serves no operator
// kind, given its shapes as each family. A module that exports an export
// of a family's own (sluice_process; a transactional export; a
// sluice_agg_ export; sluice_window_fire; sluice_join) was meant for that family: only
// the problems of the families it was meant for are worth reading, each
// problem once. A module meant for none gets those of the batch and
// transactional families.
func kindProblems(fam families) []string {
	s := fam[famBatch]
	var meant [nFamilies]bool
	meant[famBatch] = exports(s, abi.ExportProcess)
	meant[famTxn] = exports(s, abi.ExportPlan) || exports(s, abi.ExportApply) || exports(s, abi.ExportPost)
	meant[famAggregate] = exports(s, abi.ExportAggAdd) || exports(s, abi.ExportAggMerge) || exports(s, abi.ExportAggFire)
	meant[famWindow] = exports(s, abi.ExportWindowFire)
	meant[famJoin] = exports(s, abi.ExportJoin)
	return problemsOf(meant, fam)
}

// problemsOf returns the problems worth reading of a module meant for the
// families set in meant: those of its shape as each, each problem once;
// when it is meant for none, those of the batch and transactional
// families.
func problemsOf(meant [nFamilies]bool, fam families) []string {
	if meant == [nFamilies]bool{} {
		meant[famBatch], meant[famTxn] = true, true
	}
	var problems []string
	for f, m := range meant {
		if m {
			problems = union(problems, fam[f].problems)
		}
	}
	return problems
}

// union returns the problems of a followed by those of b that a lacks.
func union(a, b []string) []string {
	problems := slices.Clone(a)
	for _, p := range b {
		if !slices.Contains(problems, p) {
			problems = append(problems, p)
		}
	}
	return problems
}

// Source languages Report.Language names.
const (
	langGo             = "Go"
	langC              = "C"
	langCPP            = "C++"
	langRust           = "Rust"
	langAssemblyScript = "AssemblyScript"
)

// commandProblemPrefix begins the problem inspectKind reports for a WASI
// command, which advise replaces with one naming the language's flag.
const commandProblemPrefix = "module is a WASI command"

// componentProblem is the problem of a WebAssembly component, which no
// engine compiles as a module.
const componentProblem = "the file is a WebAssembly component (the component model, WASI 0.2), not a core module: " +
	"build a core module instead: Rust --target wasm32-unknown-unknown, C (clang) --target=wasm32-wasi, " +
	"Go GOOS=wasip1 GOARCH=wasm; not wasm32-wasip2 and not through wasm-tools component new"

// advise rewrites and extends the problems of a module that serves no
// operator kind so that each says what to change in the build, in lang's
// terms where lang is known: a WASI command gets the reactor flag of its
// language, a missing sluice_alloc (the SDK's allocator) the advice to
// link the SDK, and an import from a module the host does not provide
// what usually puts it there.
func advise(problems []string, lang string, s *shape) []string {
	out := make([]string, 0, len(problems))
	replaced, advisedAlloc := false, false
	for _, p := range problems {
		switch {
		case strings.HasPrefix(p, commandProblemPrefix):
			p = commandProblem(lang)
			replaced = true
		case strings.HasPrefix(p, "missing export "+abi.ExportAlloc+" ") && !advisedAlloc:
			// Said once, though both operator families require it.
			p += ": the SDK's allocator export is missing: link the SDK, or export " + abi.ExportAlloc + " yourself; " + sdkAdvice(lang)
			advisedAlloc = true
		default:
			for _, im := range s.imports {
				if im.Module == wasiModule || im.Module == abi.HostModule || !strings.HasPrefix(p, "import "+im.Module+"."+im.Name+" ") {
					continue
				}
				if hint := importAdvice(im, lang); hint != "" {
					p += ": " + hint
				}
				break
			}
		}
		out = append(out, p)
	}
	if s.command && !replaced {
		out = append(out, commandProblem(lang))
	}
	return out
}

// commandProblem says that the module is a WASI command and how to build
// a reactor in lang, or in every language when lang is not known.
func commandProblem(lang string) string {
	const p = commandProblemPrefix + " (it exports _start), not a reactor: rebuild it as a reactor; "
	switch lang {
	case langGo:
		return p + "Go: add -buildmode=c-shared (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared)"
	case langC, langCPP:
		return p + "clang: add -mexec-model=reactor (clang --target=wasm32-wasi -mexec-model=reactor)"
	case langRust:
		return p + `Rust: build a library, not a binary: [lib] crate-type = ["cdylib"] in Cargo.toml and src/lib.rs instead of src/main.rs, with --target wasm32-unknown-unknown`
	case langAssemblyScript:
		return p + "AssemblyScript: build without --exportStart"
	}
	return p + "Go: -buildmode=c-shared; C (clang): -mexec-model=reactor; " +
		`Rust: a cdylib library ([lib] crate-type = ["cdylib"]), not a binary; AssemblyScript: no --exportStart`
}

// sdkAdvice says how a plugin of lang gets the SDK's exports.
func sdkAdvice(lang string) string {
	switch lang {
	case langGo:
		return "Go: import github.com/sluicehq/sluice/sdk/go/sluice and register a handler in an init function"
	case langC, langCPP:
		return "C: compile sdk/c/sluice.c with the plugin (sluice plugin build does)"
	case langRust:
		return "Rust: depend on the SDK crate of sdk/rust (see sdk/rust/README.md)"
	case langAssemblyScript:
		return "AssemblyScript: re-export the SDK's functions from assembly/index.ts (see sdk/assemblyscript/README.md)"
	}
	return "see sdk/<language>/README.md for how a plugin links the SDK, or build with `sluice plugin build`"
}

// importAdvice says what usually makes a module import im from a module
// the host does not provide, or "".
func importAdvice(im runtime.FuncInfo, lang string) string {
	switch {
	case im.Module == "gojs":
		return "the module was built for GOOS=js: build with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared"
	case im.Module == "wasi_unstable":
		return "an old WASI snapshot: rebuild with a toolchain that targets wasi_snapshot_preview1"
	case strings.HasPrefix(im.Module, "wasi:"):
		return "a WASI 0.2 (preview 2) import: build for WASI preview 1 (Rust --target wasm32-unknown-unknown, C --target=wasm32-wasi)"
	case strings.HasPrefix(im.Module, "__wbindgen") || im.Module == "wbg":
		return "wasm-bindgen glue: a Sluice plugin does not use wasm-bindgen or wasm-pack; build with cargo build --target wasm32-unknown-unknown"
	case im.Module == "env" && im.Name == "abort" && lang == langAssemblyScript:
		return "AssemblyScript's abort: build with --use abort= (sluice plugin build does)"
	case im.Module == "env" && im.Name == "trace" && lang == langAssemblyScript:
		return "AssemblyScript's trace(): remove the calls, or log through the SDK"
	case im.Module == "env" && im.Name == "seed" && lang == langAssemblyScript:
		return "AssemblyScript's Math.random needs a seed from the host, which the sandbox does not give: derive randomness from the record"
	case im.Module == "env":
		return "an undefined function: the module calls " + im.Name + " without defining it; define it, or link the file that does" +
			" (for C, every plugin .c file and sdk/c/sluice.c; a host function is imported from module \"" + abi.HostModule + "\")"
	}
	return ""
}

// importsASAbort reports whether imports include AssemblyScript's abort,
// env.abort(message, file, line, column), which AssemblyScript modules
// import unless built with --use abort=.
func importsASAbort(imports []runtime.FuncInfo) bool {
	want := runtime.Signature{Params: []runtime.ValueType{runtime.I32, runtime.I32, runtime.I32, runtime.I32}}
	for _, im := range imports {
		if im.Module == "env" && im.Name == "abort" && im.Signature.Equal(want) {
			return true
		}
	}
	return false
}

// isComponent reports whether wasm begins with the preamble of a
// WebAssembly component (magic, then version 0x0d and layer 1) rather than
// a core module (version 1, layer 0).
func isComponent(wasm []byte) bool {
	return len(wasm) >= 8 && string(wasm[:4]) == "\x00asm" && wasm[6] == 1 && wasm[7] == 0 && wasm[4] != 1
}

// sourceLanguage returns the language a module's custom sections say it
// was compiled from: the "language" field of its producers section, else
// its "processed-by" field, else Go for a module with Go's "go:buildid"
// section; "" when there is no such section. It reads the sections'
// framing only and never fails: a malformed module has no language.
func sourceLanguage(wasm []byte) string {
	lang, tool, goBuildID := "", "", false
	for name, body := range wasmbin.CustomSections(wasm) {
		switch name {
		case "go:buildid":
			goBuildID = true
		case "producers":
			lang, tool = producers(body)
		}
	}
	switch {
	case strings.HasPrefix(lang, "C_plus_plus"), strings.HasPrefix(lang, "C++"):
		return langCPP
	case strings.HasPrefix(lang, "C"):
		return langC
	case lang == "Rust", strings.HasPrefix(tool, "rustc"):
		return langRust
	case lang == "Go", strings.HasPrefix(tool, "Go "), goBuildID:
		return langGo
	case strings.Contains(tool, "clang"):
		return langC
	}
	return lang
}

// producers returns the first value of the language and processed-by
// fields of a producers section's body; what follows a malformed field is
// ignored.
func producers(body []byte) (lang, tool string) {
	r := &wasmbin.Reader{B: body}
	fields, err := r.U32()
	for i := uint32(0); err == nil && i < fields; i++ {
		var field string
		var values uint32
		if field, err = r.Name(); err != nil {
			break
		}
		if values, err = r.U32(); err != nil {
			break
		}
		for j := uint32(0); err == nil && j < values; j++ {
			var value string
			if value, err = r.Name(); err != nil {
				break
			}
			if _, err = r.Name(); err != nil { // the version
				break
			}
			switch {
			case j > 0:
			case field == "language":
				lang = value
			case field == "processed-by":
				tool = value
			}
		}
	}
	return lang, tool
}
