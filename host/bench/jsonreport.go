package bench

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Unavailable is a figure a report could not give: a number that came out
// infinite or not a number (a rate over no time, an interval over too few
// batches). The JSON report writes the figure as null and lists it here
// with the reason.
type Unavailable struct {
	// Figure is the figure's path in the report, "dynamic.phases[2].low".
	Figure string `json:"figure"`
	// Reason says why it has no value.
	Reason string `json:"reason"`
}

// writeJSON writes a report as indented JSON. Every non-finite number is
// written as null, which encoding/json would refuse and fail the whole
// report for, and a top-level "unavailable" list names each one with the
// reason. The rest follows encoding/json's rules: field names and
// omitempty from the json tags, embedded structs inlined, map keys sorted,
// json.Marshaler and encoding.TextMarshaler honoured.
func writeJSON(w io.Writer, report any) error {
	var e finiteEncoder
	if err := e.value(reflect.ValueOf(report), "", true); err != nil {
		return fmt.Errorf("bench: writing the JSON report: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, e.buf.Bytes(), "", "  "); err != nil {
		return fmt.Errorf("bench: writing the JSON report: %w", err)
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// finiteEncoder writes compact JSON with non-finite numbers as null,
// collecting them.
type finiteEncoder struct {
	buf         bytes.Buffer
	unavailable []Unavailable
}

// value writes v, found at path; top says v is the report itself, whose
// object gains the "unavailable" list.
func (e *finiteEncoder) value(v reflect.Value, path string, top bool) error {
	if !v.IsValid() {
		e.buf.WriteString("null")
		return nil
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		e.buf.WriteString("null")
		return nil
	}
	if t := v.Type(); t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
		return e.plain(v)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return e.value(v.Elem(), path, top)
	case reflect.Struct:
		return e.object(v, path, top)
	case reflect.Slice:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return e.plain(v)
		}
		fallthrough
	case reflect.Array:
		e.buf.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.value(v.Index(i), path+"["+strconv.Itoa(i)+"]", false); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
		return nil
	case reflect.Map:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = fmt.Sprint(k.Interface())
		}
		order := make([]int, len(keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
		e.buf.WriteByte('{')
		for n, i := range order {
			if n > 0 {
				e.buf.WriteByte(',')
			}
			name, _ := json.Marshal(names[i])
			e.buf.Write(name)
			e.buf.WriteByte(':')
			if err := e.value(v.MapIndex(keys[i]), join(path, names[i]), false); err != nil {
				return err
			}
		}
		e.buf.WriteByte('}')
		return nil
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			e.buf.WriteString("null")
			e.unavailable = append(e.unavailable, Unavailable{Figure: path, Reason: fmt.Sprintf("not a finite number (%v)", f)})
			return nil
		}
	}
	return e.plain(v)
}

// plain writes v as encoding/json does.
func (e *finiteEncoder) plain(v reflect.Value) error {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	e.buf.Write(b)
	return nil
}

// object writes a struct's fields as encoding/json names them.
func (e *finiteEncoder) object(v reflect.Value, path string, top bool) error {
	e.buf.WriteByte('{')
	first := true
	if err := e.fields(v, path, &first); err != nil {
		return err
	}
	if top && len(e.unavailable) > 0 {
		if !first {
			e.buf.WriteByte(',')
		}
		b, err := json.Marshal(e.unavailable)
		if err != nil {
			return err
		}
		e.buf.WriteString(`"unavailable":`)
		e.buf.Write(b)
	}
	e.buf.WriteByte('}')
	return nil
}

// fields writes the fields of struct v, inlining embedded structs without
// a name of their own.
func (e *finiteEncoder) fields(v reflect.Value, path string, first *bool) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				ft, fv = ft.Elem(), fv.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := e.fields(fv, path, first); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.Contains(","+opts+",", ",omitempty,") && empty(fv) {
			continue
		}
		if !*first {
			e.buf.WriteByte(',')
		}
		*first = false
		b, _ := json.Marshal(name)
		e.buf.Write(b)
		e.buf.WriteByte(':')
		if err := e.value(fv, join(path, name), false); err != nil {
			return err
		}
	}
	return nil
}

// empty is encoding/json's omitempty test.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// join appends a field name to a figure's path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
