package registry

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
)

// VersionSection is the name of the custom section in which a module
// declares its version, as UTF-8 text.
const VersionSection = "sluice.version"

// maxVersionLen bounds a declared version; longer text is refused.
const maxVersionLen = 256

// Entry describes one stored module: the API's schema.Module, which its
// answers and the CLI share.
type Entry = schema.Module

// Deployment records that an operator started running a module.
type Deployment = schema.Deployment

// Errors of the registry.
var (
	// ErrInvalid is wrapped by the error of Add for a module the host
	// would refuse to load.
	ErrInvalid = errors.New("registry: module refused")
	// ErrNotFound is wrapped by the error of Get for an unknown hash.
	ErrNotFound = errors.New("registry: no such module")
)

// Registry is a directory of stored modules. It is safe for concurrent use
// by the goroutines of one process; two processes must not share a
// directory.
type Registry struct {
	dir string
	now func() time.Time

	mu sync.Mutex
}

// Open opens (creating it if needed) the registry in dir.
func Open(dir string) (*Registry, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return &Registry{dir: dir, now: time.Now}, nil
}

// Dir is the registry's directory.
func (r *Registry) Dir() string { return r.dir }

// Add checks wasm with eng (plugin.Check) and stores it under its hash,
// unless it is stored already, in which case its existing entry (with its
// first deployment time) is returned. A module that serves no operator kind
// is refused with an error wrapping ErrInvalid that lists its problems; a
// check cut short by the end of ctx fails with ctx's error instead; a
// check that the host fails (eng's compilation cache cannot be read or
// written: runtime.ErrCache) is an error of its own, which does not.
func (r *Registry) Add(ctx context.Context, eng runtime.Engine, name string, wasm []byte) (Entry, error) {
	hash := Hash(wasm)
	if e, err := r.Get(hash); err == nil {
		return e, nil
	}
	version, err := ReadVersion(wasm)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
	}
	rep, err := plugin.Check(ctx, eng, name, wasm)
	if err != nil {
		return Entry{}, fmt.Errorf("registry: %s: %w", name, err)
	}
	if !rep.OK() {
		// A check cut short by ctx (the host stopping while it starts)
		// says nothing of the module: its error is ctx's, not ErrInvalid.
		if err := ctx.Err(); err != nil {
			return Entry{}, fmt.Errorf("registry: %s: checking it: %w", name, err)
		}
		return Entry{}, fmt.Errorf("%w: %s: %s", ErrInvalid, name, strings.Join(rep.Problems, "; "))
	}
	e := Entry{
		SHA256: hash, Name: filepath.Base(name), Version: version, Size: len(wasm),
		ABIVersion: rep.ABIVersion, Language: rep.Language, Deployed: r.now().UTC(),
	}
	for _, k := range rep.Kinds {
		e.Kinds = append(e.Kinds, string(k))
	}
	for _, f := range rep.Exports {
		e.Exports = append(e.Exports, f.String())
	}
	for _, f := range rep.Imports {
		e.Imports = append(e.Imports, f.String())
	}
	meta, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return Entry{}, fmt.Errorf("registry: %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := writeFile(filepath.Join(r.dir, hash+".wasm"), wasm); err != nil {
		return Entry{}, err
	}
	if err := writeFile(filepath.Join(r.dir, hash+".json"), append(meta, '\n')); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Hash returns the hash the registry stores wasm under: the SHA-256 of
// its bytes, in hex.
func Hash(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// Get returns the entry of the module whose hash is hash.
func (r *Registry) Get(hash string) (Entry, error) {
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.Base(hash)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, fmt.Errorf("%w: sha256 %s", ErrNotFound, hash)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("registry: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("registry: %s.json: %w", hash, err)
	}
	return e, nil
}

// Module returns the bytes of the module whose hash is hash.
func (r *Registry) Module(hash string) ([]byte, error) {
	b, err := plugin.ReadModule(filepath.Join(r.dir, filepath.Base(hash)+".wasm"), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: sha256 %s", ErrNotFound, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return b, nil
}

// List returns every stored module, oldest deployment first.
func (r *Registry) List() ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(r.dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var out []Entry
	for _, n := range names {
		e, err := r.Get(strings.TrimSuffix(filepath.Base(n), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := a.Deployed.Compare(b.Deployed); c != 0 {
			return c
		}
		return strings.Compare(a.SHA256, b.SHA256)
	})
	return out, nil
}

// deploymentsFile is the log of deployments in the registry's directory.
const deploymentsFile = "deployments.jsonl"

// Record appends d to the deployment log; a zero d.At is set to now.
func (r *Registry) Record(d Deployment) error {
	if d.At.IsZero() {
		d.At = r.now().UTC()
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(r.dir, deploymentsFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("registry: %s: %w", deploymentsFile, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("registry: %s: %w", deploymentsFile, err)
	}
	return nil
}

// Deployments returns the deployment log, oldest first; operator, when
// not "", keeps only that operator's.
func (r *Registry) Deployments(operator string) ([]Deployment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.Open(filepath.Join(r.dir, deploymentsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	defer f.Close()
	var out []Deployment
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var d Deployment
		if err := json.Unmarshal(text, &d); err != nil {
			// A torn last line from a crash is skipped, not fatal.
			continue
		}
		if operator == "" || d.Operator == operator {
			out = append(out, d)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("registry: %s: %w", deploymentsFile, err)
	}
	return out, nil
}

// writeFile writes b to path through a temporary file and a rename.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// ReadVersion returns the text of wasm's "sluice.version" custom section,
// "" when it has none. It reads only the section headers; a module that
// is not well-formed enough to find them is an error, as is a version that
// is not UTF-8, is empty, has control characters or is over 256 bytes.
// Two such sections are an error too.
func ReadVersion(wasm []byte) (string, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return "", errors.New("not a WebAssembly module (no \\0asm magic number)")
	}
	b := wasm[8:]
	var version string
	found := false
	for len(b) > 0 {
		id := b[0]
		size, n := uleb(b[1:])
		if n == 0 || uint64(len(b)-1-n) < size {
			return "", errors.New("a section runs past the end of the module")
		}
		body := b[1+n : 1+n+int(size)]
		b = b[1+n+int(size):]
		if id != 0 {
			continue
		}
		nameLen, m := uleb(body)
		if m == 0 || uint64(len(body)-m) < nameLen {
			return "", errors.New("a custom section's name runs past the section")
		}
		if string(body[m:m+int(nameLen)]) != VersionSection {
			continue
		}
		if found {
			return "", fmt.Errorf("two %q custom sections", VersionSection)
		}
		found = true
		v := string(body[m+int(nameLen):])
		if err := checkVersion(v); err != nil {
			return "", err
		}
		version = v
	}
	return version, nil
}

func checkVersion(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("the %q custom section is empty", VersionSection)
	case len(v) > maxVersionLen:
		return fmt.Errorf("the %q custom section holds %d bytes, more than %d", VersionSection, len(v), maxVersionLen)
	case !isText(v):
		return fmt.Errorf("the %q custom section is not UTF-8 text without control characters", VersionSection)
	}
	return nil
}

func isText(s string) bool {
	for _, c := range s {
		if c == 0xfffd || c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// uleb reads an unsigned LEB128 number of at most 5 bytes; n is 0 when
// it is malformed.
func uleb(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// AppendVersion returns wasm with a "sluice.version" custom section
// holding version appended: what an SDK's build does to declare a version,
// and what tests use to make versioned modules.
func AppendVersion(wasm []byte, version string) ([]byte, error) {
	if err := checkVersion(version); err != nil {
		return nil, err
	}
	var body []byte
	body = appendULEB(body, uint64(len(VersionSection)))
	body = append(body, VersionSection...)
	body = append(body, version...)
	out := append(bytes.Clone(wasm), 0)
	out = appendULEB(out, uint64(len(body)))
	return append(out, body...), nil
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
