package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	e := &enricher{rules: &rules{}}
	sluice.Configure(e.configure)
	sluice.FlatMap(e.handle)
}

// enricher is the operator: its rules and an output buffer reused across
// records (Emit encodes at once).
type enricher struct {
	rules *rules
	buf   []byte
}

func (e *enricher) configure(config []byte) error {
	r, err := parseRules(config)
	if err != nil {
		return err
	}
	e.rules = r
	return nil
}

func (e *enricher) handle(r sluice.Record, out *sluice.Emitter) error {
	v, keep, err := e.rules.apply(e.buf[:0], r.Value)
	if err != nil {
		return err
	}
	if keep {
		e.buf = v
		r.Value = v
		out.Emit(r)
	}
	return nil
}

// rules is a parsed configuration.
type rules struct {
	require []string
	min     []minRule // sorted by field, for a deterministic order of checks
	set     []member  // in the configuration's order
}

type minRule struct {
	field string
	min   float64
}

// member is one name/value pair of a JSON object: key is the name's JSON
// text (quotes included), value the value's JSON text.
type member struct {
	name  string
	key   []byte
	value []byte
}

// parseRules reads the operator's configuration; null means no rules.
func parseRules(config []byte) (*rules, error) {
	var raw struct {
		Require []string           `json:"require"`
		Min     map[string]float64 `json:"min"`
		Set     json.RawMessage    `json:"set"`
	}
	if len(bytes.TrimSpace(config)) == 0 {
		config = []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("enrich configuration: %w (want {\"require\": [names], \"min\": {name: number}, \"set\": {name: value}})", err)
	}
	r := &rules{require: raw.Require}
	for _, f := range raw.Require {
		if f == "" {
			return nil, errors.New(`enrich configuration: "require" holds an empty field name`)
		}
	}
	for f, m := range raw.Min {
		r.min = append(r.min, minRule{field: f, min: m})
	}
	sort.Slice(r.min, func(i, j int) bool { return r.min[i].field < r.min[j].field })
	if len(raw.Set) > 0 && string(raw.Set) != "null" {
		set, err := readObject(raw.Set)
		if err != nil {
			return nil, fmt.Errorf(`enrich configuration: "set": %w`, err)
		}
		for i := range set {
			if find(set[:i], set[i].name) >= 0 {
				return nil, fmt.Errorf(`enrich configuration: "set" names field %q twice`, set[i].name)
			}
			var c bytes.Buffer
			if err := json.Compact(&c, set[i].value); err != nil {
				return nil, fmt.Errorf(`enrich configuration: "set".%s: %w`, set[i].name, err)
			}
			set[i].value = c.Bytes()
		}
		r.set = set
	}
	return r, nil
}

// apply checks value against the rules and, when it passes, appends the
// enriched object to dst. keep is false for a record to drop; err is set
// for a record to dead-letter.
func (r *rules) apply(dst, value []byte) (out []byte, keep bool, err error) {
	obj, err := readObject(value)
	if err != nil {
		return nil, false, fmt.Errorf("value is not a JSON object: %w", err)
	}
	for _, f := range r.require {
		if find(obj, f) < 0 {
			return nil, false, nil
		}
	}
	for _, m := range r.min {
		i := find(obj, m.field)
		if i < 0 {
			return nil, false, nil
		}
		v := obj[i].value
		if len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			return nil, false, fmt.Errorf("field %q is %s, not a number", m.field, kind(v))
		}
		n, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, false, fmt.Errorf("field %q: %w", m.field, err)
		}
		if n < m.min {
			return nil, false, nil
		}
	}
	dst = append(dst, '{')
	for i, m := range obj {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.key...)
		dst = append(dst, ':')
		if s := find(r.set, m.name); s >= 0 {
			dst = append(dst, r.set[s].value...)
		} else {
			dst = append(dst, m.value...)
		}
	}
	n := len(obj)
	for _, s := range r.set {
		if find(obj, s.name) >= 0 {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, s.key...)
		dst = append(dst, ':')
		dst = append(dst, s.value...)
	}
	return append(dst, '}'), true, nil
}

// find returns the index of the last member called name (the one a JSON
// decoder keeps), or -1.
func find(obj []member, name string) int {
	for i := len(obj) - 1; i >= 0; i-- {
		if obj[i].name == name {
			return i
		}
	}
	return -1
}

// kind names the JSON type of a value's text, for messages.
func kind(v []byte) string {
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "not a number"
}

// readObject splits data, which must hold exactly one JSON object, into its
// members in order, keeping each name's and value's JSON text.
func readObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("it is %s", kind(bytes.TrimLeft(data, " \t\r\n")))
	}
	var obj []member
	for dec.More() {
		start := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		name, _ := tok.(string)
		end := int(dec.InputOffset())
		// Between the previous token and the name there is only white
		// space and a comma: the name's text starts at its quote.
		start += bytes.IndexByte(data[start:end], '"')
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, syntaxError(err)
		}
		obj = append(obj, member{name: name, key: data[start:end], value: value})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return obj, nil
}

func syntaxError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of JSON")
	}
	return err
}
