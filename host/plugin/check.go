package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/runtime"
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
	Kinds      []Kind             // the operator kinds the module can serve
	Notes      []string           // observations that are not problems
	Problems   []string           // why Load would refuse it; empty for a good module
}

// OK reports whether the module has no problems.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Check inspects wasm as Load does and reports what it found. It never fails:
// a module that is not WebAssembly, or that Load would refuse, gets a Report
// whose Problems say why. Guest log messages during the check are discarded.
func Check(ctx context.Context, eng runtime.Engine, name string, wasm []byte) Report {
	sum := sha256.Sum256(wasm)
	r := Report{Name: name, Size: len(wasm), SHA256: hex.EncodeToString(sum[:])}
	mod, lerr := compile(ctx, eng, name, wasm)
	if lerr != nil {
		r.Problems = lerr.Problems
		return r
	}
	defer func() { _ = mod.Close(context.WithoutCancel(ctx)) }()
	s := inspect(mod, "map, filter, flatmap and keyed operators")
	st := inspectKind(mod, KindTransactional, "transactional operators")
	if s.instantiable {
		c := &call{plugin: name, limits: DefaultLimits(), logger: slog.New(slog.DiscardHandler)}
		v, err := abiVersion(ctx, mod, c)
		s.version(v, err)
		st.version(v, err)
	}
	r.Memory, r.Exports, r.Imports, r.Command, r.ABIVersion = s.memory, s.exports, s.imports, s.command, s.abiVersion
	// A module serves the batch kinds, the transactional kind, or both;
	// it has problems only when it serves neither, and then both sets of
	// missing exports are worth reading.
	if len(s.problems) == 0 {
		r.Kinds = []Kind{KindMap, KindFilter, KindFlatMap, KindKeyed}
	}
	if len(st.problems) == 0 {
		r.Kinds = append(r.Kinds, KindTransactional)
	}
	if len(r.Kinds) == 0 {
		r.Problems = s.problems
		for _, p := range st.problems {
			if !slices.Contains(r.Problems, p) {
				r.Problems = append(r.Problems, p)
			}
		}
	}
	if len(s.usesState) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("imports %s: serving a map, filter or flatmap operator, any call to them fails the record; only keyed operators have state",
			strings.Join(s.usesState, ", ")))
	}
	return r
}
