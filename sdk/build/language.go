package build

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// Language is a language a plugin can be written in.
type Language string

// The languages Sluice has a guest SDK for.
const (
	Go             Language = "go"
	Rust           Language = "rust"
	C              Language = "c"
	AssemblyScript Language = "assemblyscript"
	WAT            Language = "wat"
)

// Languages returns every Language, in the order Detect looks for them.
func Languages() []Language {
	return []Language{Go, Rust, C, AssemblyScript, WAT}
}

// ParseLanguage returns the Language named s ("as" is accepted for
// AssemblyScript), or an error listing the names it knows.
func ParseLanguage(s string) (Language, error) {
	switch l := Language(strings.ToLower(strings.TrimSpace(s))); l {
	case Go, Rust, C, AssemblyScript, WAT:
		return l, nil
	case "as":
		return AssemblyScript, nil
	}
	return "", fmt.Errorf("%w: %q (known: %s)", ErrUnknownLanguage, s, languageList())
}

func languageList() string {
	ls := Languages()
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// Errors of Detect and ParseLanguage, matched with errors.Is.
var (
	// ErrUnknownLanguage: the directory holds no plugin source Detect
	// recognises, or a language name is not one of Languages.
	ErrUnknownLanguage = errors.New("build: unknown plugin language")
	// ErrAmbiguous: the directory holds the sources of more than one
	// language; Options.Language chooses.
	ErrAmbiguous = errors.New("build: more than one plugin language")
)

// evidence is what made Detect pick a language: the file or pattern it
// found, for messages.
type evidence struct {
	lang Language
	what string
}

// Detect returns the language of the plugin in dir, from its files:
//
//	go              non-test .go files, all of package main
//	rust            Cargo.toml
//	c               *.c files
//	assemblyscript  assembly/index.ts
//	wat             <name of dir>.wat
//
// It fails with ErrUnknownLanguage when none matches and ErrAmbiguous when
// more than one does, naming the files it found.
func Detect(dir string) (Language, error) {
	found, err := detect(dir)
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 1:
		return found[0].lang, nil
	case 0:
		return "", fmt.Errorf("%w: %s holds none of: Go files of package main, Cargo.toml (Rust), *.c (C), assembly/index.ts (AssemblyScript), %s.wat (WAT)",
			ErrUnknownLanguage, dir, dirName(dir))
	}
	parts := make([]string, len(found))
	for i, e := range found {
		parts[i] = fmt.Sprintf("%s (%s)", e.what, e.lang)
	}
	return "", fmt.Errorf("%w: %s holds %s: name the language to build", ErrAmbiguous, dir, strings.Join(parts, " and "))
}

// detect returns the evidence for every language found in dir.
func detect(dir string) ([]evidence, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	var found []evidence
	var goFiles, cFiles []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			goFiles = append(goFiles, name)
		case strings.HasSuffix(name, ".c"):
			cFiles = append(cFiles, name)
		}
	}
	if len(goFiles) > 0 && allMain(dir, goFiles) {
		found = append(found, evidence{Go, "Go files of package main"})
	}
	if isFile(filepath.Join(dir, "Cargo.toml")) {
		found = append(found, evidence{Rust, "Cargo.toml"})
	}
	if len(cFiles) > 0 {
		found = append(found, evidence{C, strings.Join(cFiles, ", ")})
	}
	if isFile(filepath.Join(dir, "assembly", "index.ts")) {
		found = append(found, evidence{AssemblyScript, "assembly/index.ts"})
	}
	if isFile(filepath.Join(dir, dirName(dir)+".wat")) {
		found = append(found, evidence{WAT, dirName(dir) + ".wat"})
	}
	return found, nil
}

// allMain reports whether every named Go file in dir declares package main.
func allMain(dir string, files []string) bool {
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly)
		if err != nil || f.Name.Name != "main" {
			return false
		}
	}
	return true
}

// dirName returns the name of dir itself, resolving "." and the like.
func dirName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return filepath.Base(abs)
	}
	return filepath.Base(dir)
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
