package pipeline

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The keys a pipeline file may hold are those of the yaml tags of Pipeline
// and the types of its fields, found by reflection, so that the checks
// and the messages that list known keys cannot drift from what the
// decoder takes. A field's types tag lists the source or sink types the
// key applies to (Source, Sink); none: every type.

// key is one key of a mapping: a tagged field of a struct.
type key struct {
	name  string
	typ   reflect.Type
	types []string // the source or sink types it applies to; nil: all
}

// keysOf returns the keys of struct type t, in field order.
func keysOf(t reflect.Type) []key {
	var keys []key
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		k := key{name: name, typ: f.Type}
		if ts := f.Tag.Get("types"); ts != "" {
			k.types = strings.Split(ts, ",")
		}
		keys = append(keys, k)
	}
	return keys
}

// names returns the names of keys, in order, comma-separated.
func names(keys []key) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.name
	}
	return strings.Join(s, ", ")
}

// describe names a mapping of type t in messages: "an operator", "limits".
func describe(t reflect.Type, path []any) string {
	if w, ok := map[string]string{
		"Pipeline": "the pipeline", "Source": "a source", "Operator": "an operator", "Sink": "a sink",
		"Table": "a table", "TableInit": "init", "Punctuation": "punctuation", "Limits": "limits",
		"Batch": "batch", "State": "state", "NATS": "nats", "DeadLetter": "dead_letter", "HTTP": "http",
		"Grants": "grants", "GrantDir": "a granted directory", "Adaptive": "adaptive",
		"Window": "a window", "Watermark": "watermark", "Join": "join", "Interval": "interval", "Late": "late",
		"Control": "control",
	}[t.Name()]; ok {
		return w
	}
	return pathString(path)
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	typeErrorLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// checker walks a pipeline file's nodes against the Go types they decode
// into, and reports, each at its line and key path: keys the type does
// not have (with the nearest known key), keys of another source or sink
// type, values of the wrong shape, and values that do not decode into
// their field.
type checker struct {
	file string
	errs []error
}

func (c *checker) add(line int, path []any, msg string) {
	c.errs = append(c.errs, &Error{File: c.file, Line: line, Path: pathString(path), Msg: msg})
}

// walk checks node n, at path, against type t.
func (c *checker) walk(n *yaml.Node, t reflect.Type, path []any) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return
		}
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // the zero value
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			c.decodeError(n, path, err)
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		c.walk(n, t.Elem(), path)
	case reflect.Interface:
		// Any YAML (an operator's config).
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			c.add(n.Line, path, fmt.Sprintf("want a mapping of keys (%s), not %s", names(keysOf(t)), shape(n)))
			return
		}
		c.mapping(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.add(n.Line, path, fmt.Sprintf("want a list, not %s", shape(n)))
			return
		}
		for i, e := range n.Content {
			c.walk(e, t.Elem(), append(slices.Clip(path), i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.add(n.Line, path, fmt.Sprintf("want a mapping, not %s", shape(n)))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			c.walk(n.Content[i+1], t.Elem(), append(slices.Clip(path), n.Content[i].Value))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			c.add(n.Line, path, fmt.Sprintf("want %s, not %s", scalarWords(t), shape(n)))
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			c.add(n.Line, path, scalarError(n, t))
		}
	}
}

// mapping checks the keys of mapping n against struct type t.
func (c *checker) mapping(n *yaml.Node, t reflect.Type, path []any) {
	keys := keysOf(t)
	// A source's or sink's type decides which of its keys apply.
	typ, typed := "", false
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "type" {
			typ = n.Content[i+1].Value
		}
	}
	var applicable []key
	for _, k := range keys {
		if k.types != nil && slices.Contains(k.types, typ) {
			typed = true
		}
	}
	for _, k := range keys {
		if k.types == nil || !typed || slices.Contains(k.types, typ) {
			applicable = append(applicable, k)
		}
	}
	what := describe(t, path)
	if typed {
		what = fmt.Sprintf("a %s %s", typ, strings.TrimPrefix(what, "a "))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		at := append(slices.Clip(path), kn.Value)
		if line, ok := seen[kn.Value]; ok {
			c.add(kn.Line, at, fmt.Sprintf("%s is given twice (first at line %d)", kn.Value, line))
			continue
		}
		seen[kn.Value] = kn.Line
		i := slices.IndexFunc(keys, func(k key) bool { return k.name == kn.Value })
		if i < 0 {
			c.add(kn.Line, at, unknownKey(kn.Value, what, keys, applicable))
			continue
		}
		k := keys[i]
		if typed && k.types != nil && !slices.Contains(k.types, typ) {
			c.add(kn.Line, at, fmt.Sprintf("%s is a key of %s, not of %s (its keys: %s)",
				k.name, typesWords(k.types, strings.TrimPrefix(describe(t, path), "a ")), what, names(applicable)))
			continue
		}
		c.walk(vn, k.typ, at)
	}
}

// unknownKey says that name is not a key of what, suggesting the nearest
// applicable key, or the mapping below that holds name.
func unknownKey(name, what string, keys, applicable []key) string {
	msg := fmt.Sprintf("unknown key %q in %s", name, what)
	if s := nearest(name, applicable); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else {
		for _, k := range keys {
			inner := k.typ
			for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct && !reflect.PointerTo(inner).Implements(unmarshalerType) &&
				slices.ContainsFunc(keysOf(inner), func(k key) bool { return k.name == name }) {
				msg += fmt.Sprintf(": it belongs under %s (%s: {%s: ...})", k.name, k.name, name)
				break
			}
		}
	}
	return msg + " (known: " + names(applicable) + ")"
}

// typesWords writes a key's types as "generator sources", "nats and
// jetstream sinks".
func typesWords(types []string, what string) string {
	s := strings.Join(types, ", ")
	if n := len(types); n > 1 {
		s = strings.Join(types[:n-1], ", ") + " and " + types[n-1]
	}
	return s + " " + what + "s"
}

// nearest returns the key closest to name, if one is close enough to be
// what was meant: the same but for case, _ and -, or a few edits away.
func nearest(name string, keys []key) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	best, bestD := "", math.MaxInt
	for _, k := range keys {
		d := distance(norm(name), norm(k.name))
		if d < bestD {
			best, bestD = k.name, d
		}
	}
	if bestD <= max(1, len(name)/3) {
		return best
	}
	return ""
}

// distance is the edit distance between a and b: insertions, deletions,
// substitutions and transpositions of adjacent bytes.
func distance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// decodeError reports the error of a type that decodes itself (a
// duration, a size, knobs), at the line it names.
func (c *checker) decodeError(n *yaml.Node, path []any, err error) {
	te, ok := err.(*yaml.TypeError)
	if !ok {
		c.add(n.Line, path, err.Error())
		return
	}
	for _, s := range te.Errors {
		line, msg := n.Line, s
		if m := typeErrorLineRE.FindStringSubmatch(s); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		c.add(line, path, msg)
	}
}

// shape names the kind of node n.
func shape(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// scalarWords says what a value of type t is written as.
func scalarWords(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "a duration (write it like 250ms, 5s or 1m)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number of 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a single value"
}

// scalarError says why scalar n does not decode into type t.
func scalarError(n *yaml.Node, t reflect.Type) string {
	if n.ShortTag() == "!!int" && t != reflect.TypeFor[time.Duration]() {
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			lim := int64(1)<<(t.Bits()-1) - 1
			return fmt.Sprintf("%s is out of range (want %d to %d)", n.Value, -lim-1, lim)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if !strings.HasPrefix(n.Value, "-") {
				return fmt.Sprintf("%s is out of range (want 0 to %d)", n.Value, uint64(math.MaxUint64)>>(64-t.Bits()))
			}
		}
	}
	return fmt.Sprintf("%q is not %s", n.Value, scalarWords(t))
}
