package plugin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/wasmbin"
)

// DeclareKinds returns wasm with a sluice.kinds custom section (ABI.md
// section 12) naming the operator kinds its handler serves, as its
// sluice_kinds export reports them, and those kinds: what `sluice plugin
// build` does for the SDKs whose plugins register their handler when the
// module starts (Go, C, AssemblyScript), which cannot write the section
// when they compile. It instantiates the module once, as Load does, and
// calls sluice_kinds on that instance.
//
// A module that has the section already, or no sluice_kinds export, is
// returned as it is, with no kinds; so is one that Load would refuse as
// any operator (it does not compile or instantiate, its sluice_kinds has
// another signature), which Check explains. A module whose sluice_kinds
// fails, or reports no kind (its plugin registers no handler, or more than
// one), fails with a *LoadError saying why, in the guest's words where it
// logged them; a compilation cache that eng cannot read or write, with an
// error wrapping runtime.ErrCache. name identifies the module in errors.
func DeclareKinds(ctx context.Context, eng runtime.Engine, name string, wasm []byte) ([]byte, []Kind, error) {
	if declaredKinds(wasm).declared() {
		return wasm, nil, nil
	}
	mod, err := compile(ctx, eng, name, wasm)
	var lerr *LoadError
	switch {
	case errors.As(err, &lerr):
		return wasm, nil, nil
	case err != nil:
		return nil, nil, err
	}
	defer func() { _ = mod.Close(context.WithoutCancel(ctx)) }()
	i := slices.IndexFunc(mod.Exports(), func(e runtime.FuncInfo) bool { return e.Name == abi.ExportKinds })
	if i < 0 || !mod.Exports()[i].Signature.Equal(sig(0, 1)) || !inspect(mod, "").instantiable {
		return wasm, nil, nil
	}
	c := &call{plugin: name, limits: DefaultLimits(), logger: slog.New(slog.DiscardHandler)}
	inst, err := instantiate(ctx, mod, c)
	if err != nil {
		return wasm, nil, nil
	}
	defer func() { _ = inst.Close(context.WithoutCancel(ctx)) }()
	bits, err := callI32(ctx, inst, c, abi.ExportKinds)
	if err != nil {
		return nil, nil, &LoadError{Plugin: name, Problems: []string{err.Error()}, causes: []error{err}}
	}
	ks := kindsOf(bits)
	if len(ks) == 0 {
		// The guest says why in its own words, when it does.
		p := c.reason()
		if p == "" {
			p = fmt.Sprintf("registers no usable handler: %s returned %d, which names no operator kind", abi.ExportKinds, bits)
		}
		return nil, nil, &LoadError{Plugin: name, Problems: []string{p}}
	}
	return appendKinds(wasm, ks), ks, nil
}

// DeclaredKinds returns the operator kinds wasm declares in its
// sluice.kinds custom section (ABI.md section 12), in the order of the
// Kind constants; nil when it has no such section, or one that Load
// refuses (two of them, none naming a kind this host knows). It reads the
// module's section headers only: the module may still be one that Load
// refuses for other reasons, which Check reports.
func DeclaredKinds(wasm []byte) []Kind {
	d := declaredKinds(wasm)
	if d.problem() != "" {
		return nil
	}
	return d.kinds
}

// Bounds on what a declaration keeps of the names it does not know, for
// messages: a section is the module author's text, of any length.
const (
	maxUnknownKinds   = 3
	maxUnknownKindLen = 32
)

// declaration is what a module's sluice.kinds custom sections (ABI.md
// section 12) declare: the operator kinds its handler serves.
type declaration struct {
	sections int      // the number of sluice.kinds sections
	kinds    []Kind   // the kinds they name, in the order of kinds(), each once
	unknown  []string // names that are no kind, quoted and cut short
}

// declaredKinds reads the sluice.kinds custom sections of wasm. Names are
// separated by commas; spaces around them and empty names are ignored.
func declaredKinds(wasm []byte) declaration {
	var d declaration
	var bits int32
	for name, body := range wasmbin.CustomSections(wasm) {
		if name != abi.SectionKinds {
			continue
		}
		d.sections++
		for f := range strings.SplitSeq(string(body), ",") {
			f = strings.TrimSpace(f)
			k, err := ParseKind(f)
			switch {
			case f == "":
			case err == nil:
				bits |= k.bit()
			case len(d.unknown) < maxUnknownKinds:
				if len(f) > maxUnknownKindLen {
					f = f[:maxUnknownKindLen] + "..."
				}
				if q := strconv.Quote(f); !slices.Contains(d.unknown, q) {
					d.unknown = append(d.unknown, q)
				}
			}
		}
	}
	d.kinds = kindsOf(bits)
	return d
}

// declared reports whether the module declares its kinds.
func (d declaration) declared() bool { return d.sections > 0 }

// problem returns why the declaration makes the module unusable as any
// operator, or "" when it does not.
func (d declaration) problem() string {
	switch {
	case d.sections > 1:
		return fmt.Sprintf("the module has %d %s custom sections: it must declare its operator kinds in one", d.sections, abi.SectionKinds)
	case d.sections == 1 && len(d.kinds) == 0 && len(d.unknown) == 0:
		return fmt.Sprintf("custom section %s is empty: it must name the operator kinds the module serves, separated by commas (%s)",
			abi.SectionKinds, orList(kinds()))
	case d.sections == 1 && len(d.kinds) == 0:
		return fmt.Sprintf("custom section %s names no operator kind this host knows (%s): want %s, separated by commas",
			abi.SectionKinds, strings.Join(d.unknown, ", "), orList(kinds()))
	}
	return ""
}

// handler names the declared kinds as a handler, for messages: "a map
// handler", "a handler for map, filter or flatmap operators".
func (d declaration) handler() string {
	if len(d.kinds) == 1 {
		return article(d.kinds[0]) + " " + string(d.kinds[0]) + " handler"
	}
	return "a handler for " + orList(d.kinds) + " operators"
}

// mismatch returns the problem of running a module that declares d as an
// operator of kind, which d does not name.
func (d declaration) mismatch(kind Kind) string {
	return fmt.Sprintf("registers %s (custom section %s); the pipeline runs it as %s: set the operator's kind to %s, or use a plugin that registers %s %s handler",
		d.handler(), abi.SectionKinds, kind, orList(d.kinds), article(kind), kind)
}

// article returns the indefinite article of k's name: "an" for
// aggregate, "a" for the others.
func article(k Kind) string {
	if k == KindAggregate {
		return "an"
	}
	return "a"
}

// appendKinds returns wasm with a sluice.kinds custom section naming ks
// appended (a custom section may come anywhere).
func appendKinds(wasm []byte, ks []Kind) []byte {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = string(k)
	}
	text := strings.Join(names, ",")
	body := binary.AppendUvarint(nil, uint64(len(abi.SectionKinds)))
	body = append(body, abi.SectionKinds...)
	body = append(body, text...)
	out := append(bytes.Clone(wasm), 0)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}
