package scaffold

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/sluicehq/sluice/sdk/build"
)

// templates holds one directory per language and "common", whose files
// every project gets. A file's path is its path in the project, less the
// ".tmpl" suffix; "gitignore" and "sluice-sdk" become dot files.
//
//go:embed all:templates
var templates embed.FS

// Errors of Create, matched with errors.Is.
var (
	// ErrBadName: the project name is not one every toolchain accepts.
	ErrBadName = errors.New("scaffold: bad plugin name")
	// ErrExists: the project directory exists and is not empty.
	ErrExists = errors.New("scaffold: directory not empty")
	// ErrNoTemplate: there is no template for the language.
	ErrNoTemplate = errors.New("scaffold: no template for the language")
)

// namePattern is what a plugin name may be: a Go module path element, a
// Rust crate name, an npm package name and a file name alike.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// CheckName returns nil when name can name a plugin project, and an error
// wrapping ErrBadName saying what is allowed otherwise.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w %q: use a lower-case letter, then up to 63 lower-case letters, digits, '-' or '_'", ErrBadName, name)
	}
	return nil
}

// Languages returns the languages Create has a template for.
func Languages() []build.Language {
	var ls []build.Language
	for _, l := range build.Languages() {
		if _, err := fs.Stat(templates, path.Join("templates", string(l))); err == nil {
			ls = append(ls, l)
		}
	}
	return ls
}

// language is what a README says of a language.
type language struct {
	Dir        string // its SDK's directory under sdk/
	Title      string // its name in prose
	Source     string // the project's source files
	SDKRef     string // how the project refers to the checkout; "" if it does not
	Install    string // what to install besides sluice
	Build      string // the build command sluice plugin build runs
	NativeTest string // the native test command, if any
}

// languages describes each language with a template, for its README.
var languages = map[build.Language]language{
	build.Go: {
		Dir: "go", Title: "Go", Source: "main.go (and main_test.go, its native test)",
		SDKRef:     "the `replace` directives of go.mod, which name its sdk/go and abi modules",
		Install:    "Go itself is the only toolchain.",
		Build:      "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .",
		NativeTest: "go test .                          # the handler natively, through the SDK's test harness",
	},
	build.Rust: {
		Dir: "rust", Title: "Rust", Source: "src/lib.rs",
		SDKRef:     "the path dependency of Cargo.toml",
		Install:    "The Rust toolchain is Debian's: `apt-get install rustc cargo libstd-rust-dev-wasm32` (or `scripts/install-toolchains.sh` in the checkout); crates.io is not needed.",
		Build:      "RUSTC=/usr/bin/rustc /usr/bin/cargo build --release --target wasm32-unknown-unknown --offline",
		NativeTest: "RUSTC=/usr/bin/rustc /usr/bin/cargo test --offline   # the operator natively",
	},
	build.C: {
		Dir: "c", Title: "C", Source: "{{.Name}}.c",
		SDKRef:  "the file .sluice-sdk, which names it",
		Install: "The C toolchain is Debian's: `apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32` (or `scripts/install-toolchains.sh` in the checkout).",
		Build:   "clang --target=wasm32-wasi -O2 -mexec-model=reactor -s -I SDK/sdk/c -o {{.Name}}.wasm *.c SDK/sdk/c/sluice.c",
	},
	build.AssemblyScript: {
		Dir: "assemblyscript", Title: "AssemblyScript", Source: "assembly/index.ts",
		SDKRef:  "the relative imports of assembly/index.ts, and .sluice-sdk, where the build finds the compiler",
		Install: "The compiler, asc, is the npm package assemblyscript@" + build.ASCVersion + ", installed in the checkout's sdk/assemblyscript by `npm ci` there (Debian: `apt-get install nodejs npm`; or `scripts/install-toolchains.sh` in the checkout).",
		Build:   "asc assembly/index.ts -O3 --runtime stub --noAssert --use abort= -o {{.Name}}.wasm",
	},
	build.WAT: {
		Dir: "wat", Title: "WebAssembly text", Source: "{{.Name}}.wat",
		Install: "WebAssembly text needs `wat2wasm`, from the WebAssembly Binary Toolkit: `apt-get install wabt` (or `scripts/install-toolchains.sh` in the checkout).",
		Build:   "wat2wasm {{.Name}}.wat -o {{.Name}}.wasm",
	},
}

// data is what templates see.
type data struct {
	Lang language
	Name string // the project's name: its directory's name
	// SDK is the Sluice checkout, absolute.
	SDK string
	// SDKPath is the checkout as the project refers to it: relative to
	// the project directory when the project is inside the checkout (so
	// that the two move together), absolute otherwise; slash-separated.
	SDKPath string
	// Ident is Name with '-' replaced by '_', for identifiers.
	Ident string
	// ASImport is the AssemblyScript SDK's directory relative to the
	// project's assembly directory, for import statements.
	ASImport string
}

// Create writes a new plugin project of language lang in dir, named after
// dir's last element: a minimal stateless operator (a map that upper-cases
// the ASCII letters of each value), a README, test cases for `sluice plugin
// test` in testdata/, and what the language needs to build against the
// SDKs of the Sluice checkout sdk, which it refers to by path. dir is
// created; it must not exist or be empty. Create returns the files it
// wrote, relative to dir, sorted.
func Create(dir string, lang build.Language, sdk string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	name := filepath.Base(abs)
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if _, ok := languages[lang]; !ok || !slices.Contains(Languages(), lang) {
		return nil, fmt.Errorf("%w %q (have: %s)", ErrNoTemplate, lang, languageList())
	}
	sdk, err = filepath.Abs(sdk)
	if err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	if err := build.CheckRoot(sdk); err != nil {
		return nil, fmt.Errorf("scaffold: --sdk: %w", err)
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrExists, abs)
	}
	d := data{Lang: languages[lang], Name: name, SDK: filepath.ToSlash(sdk), SDKPath: filepath.ToSlash(sdk), Ident: strings.ReplaceAll(name, "-", "_")}
	if rel, err := filepath.Rel(sdk, abs); err == nil && filepath.IsLocal(rel) {
		back, _ := filepath.Rel(abs, sdk)
		d.SDKPath = filepath.ToSlash(back)
	}
	asRel, err := filepath.Rel(filepath.Join(abs, "assembly"), filepath.Join(sdk, "sdk", "assemblyscript", "assembly"))
	if err != nil {
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	d.ASImport = filepath.ToSlash(asRel)
	d.Lang.Source = strings.ReplaceAll(d.Lang.Source, "{{.Name}}", name)
	d.Lang.Build = strings.ReplaceAll(d.Lang.Build, "{{.Name}}", name)

	files, err := render(lang, d)
	if err != nil {
		return nil, err
	}
	if lang == build.Go {
		mod, sum, err := goModule(name, sdk, d.SDKPath)
		if err != nil {
			return nil, err
		}
		files["go.mod"], files["go.sum"] = mod, sum
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(abs, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("scaffold: %w", err)
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return nil, fmt.Errorf("scaffold: %w", err)
		}
	}
	return names, nil
}

func languageList() string {
	ls := Languages()
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// render executes the templates of lang and of "common" with d and returns
// the project's files by slash-separated path.
func render(lang build.Language, d data) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, top := range []string{"common", string(lang)} {
		base := path.Join("templates", top)
		err := fs.WalkDir(templates, base, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			src, err := fs.ReadFile(templates, p)
			if err != nil {
				return err
			}
			t, err := template.New(p).Option("missingkey=error").Parse(string(src))
			if err != nil {
				return err
			}
			var out bytes.Buffer
			if err := t.Execute(&out, d); err != nil {
				return err
			}
			files[projectPath(strings.TrimPrefix(p, base+"/"), d.Name)] = out.Bytes()
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scaffold: template %s: %w", top, err)
		}
	}
	return files, nil
}

// projectPath maps a template's path to the project file's: less the
// .tmpl suffix, NAME replaced by the project's name, and "gitignore" and
// "sluice-sdk" made dot files.
func projectPath(p, name string) string {
	p = strings.TrimSuffix(p, ".tmpl")
	dir, file := path.Split(p)
	switch file {
	case "gitignore", "sluice-sdk":
		file = "." + file
	}
	return dir + strings.ReplaceAll(file, "NAME", name)
}

// goModule returns the go.mod and go.sum of a Go project named name that
// uses the Go SDK of the checkout at sdk (referred to as sdkPath): the SDK's
// module and the abi module it requires, each replaced by its directory in
// the checkout (a module's own replace directives do not reach the modules
// that require it), and the SDK module's requirements and checksums, so
// that the project builds with the module versions the checkout is tested
// with, from the module cache that built the checkout, without the
// network. The project requires nothing of the host's module, so its
// module graph holds only what a guest needs. `go mod tidy` trims the
// requirements the project does not use.
func goModule(name, sdk, sdkPath string) (mod, sum []byte, err error) {
	sdkMod := filepath.Join(sdk, filepath.FromSlash(build.SDKModuleDir), "go.mod")
	src, err := os.ReadFile(sdkMod)
	if err != nil {
		return nil, nil, fmt.Errorf("scaffold: the checkout's Go SDK module: %w", err)
	}
	goVersion, reqs := "", []string(nil)
	sc := bufio.NewScanner(bytes.NewReader(src))
	inBlock := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case inBlock && line == ")":
			inBlock = false
		case inBlock && line != "" && !strings.HasPrefix(line, "//"):
			reqs = append(reqs, requirement(line))
		case line == "require (":
			inBlock = true
		case strings.HasPrefix(line, "require "):
			reqs = append(reqs, requirement(strings.TrimPrefix(line, "require ")))
		case strings.HasPrefix(line, "go "):
			goVersion = strings.TrimPrefix(line, "go ")
		}
	}
	if goVersion == "" {
		return nil, nil, fmt.Errorf("scaffold: %s has no go directive", sdkMod)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire %s %s\n", name, goVersion, build.SDKModulePath, localVersion)
	if len(reqs) > 0 {
		b.WriteString("\n// The Go SDK's requirements: `go mod tidy` keeps those this plugin uses.\nrequire (\n")
		for _, r := range reqs {
			fmt.Fprintf(&b, "\t%s // indirect\n", r)
		}
		b.WriteString(")\n")
	}
	b.WriteString("\n// The modules of the Sluice checkout, used from its directory.\nreplace (\n")
	fmt.Fprintf(&b, "\t%s => %s\n", build.ABIModulePath, modPath(path.Join(sdkPath, build.ABIModuleDir)))
	fmt.Fprintf(&b, "\t%s => %s\n", build.SDKModulePath, modPath(path.Join(sdkPath, build.SDKModuleDir)))
	b.WriteString(")\n")
	sum, err = os.ReadFile(filepath.Join(sdk, filepath.FromSlash(build.SDKModuleDir), "go.sum"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("scaffold: %w", err)
	}
	return b.Bytes(), sum, nil
}

// localVersion is the version by which a project requires a module it
// replaces with a directory: the zero pseudo-version, as `go mod edit`
// writes it.
const localVersion = "v0.0.0-00010101000000-000000000000"

// requirement returns the module path and version of a require line, less
// its comment.
func requirement(line string) string {
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	return strings.Join(strings.Fields(line), " ")
}

// modPath returns p as a go.mod replacement directory: a relative path
// must start with ./ or ../.
func modPath(p string) string {
	if !path.IsAbs(p) && !strings.HasPrefix(p, "./") && !strings.HasPrefix(p, "../") {
		p = "./" + p
	}
	if strings.ContainsAny(p, " \t\"") {
		p = `"` + p + `"`
	}
	return p
}
