package window

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/abi"
)

// Aggregate is a built-in aggregate, an Accumulator that needs no plugin.
type Aggregate uint8

// The built-in aggregates.
const (
	CountAggregate Aggregate = iota + 1
	SumAggregate
	MinAggregate
	MaxAggregate
	MeanAggregate
)

var aggregateNames = [...]string{CountAggregate: "count", SumAggregate: "sum", MinAggregate: "min", MaxAggregate: "max", MeanAggregate: "mean"}

// String returns the aggregate's name as the pipeline file spells it.
func (a Aggregate) String() string {
	if int(a) < len(aggregateNames) && aggregateNames[a] != "" {
		return aggregateNames[a]
	}
	return fmt.Sprintf("Aggregate(%d)", uint8(a))
}

// Builtin returns the built-in aggregate name ("count", "sum", "min",
// "max" or "mean") over field: a dotted path into a JSON object value
// ("price", "order.total"), or "" for the value itself, a number as text.
// Count counts records and takes no field.
//
// Each result's value is a JSON object with the window's key (a string),
// start and end (nanoseconds since the Unix epoch, end excluded) and the
// aggregate under its name:
//
//	{"key":"k1","start":1700000000000000000,"end":1700000060000000000,"sum":12.5}
//
// count is an integer; sum, min, max and mean are numbers in the shortest
// form that reads back as the same float64. A record whose field is
// missing, or is not a finite number, is rejected with the reason.
func Builtin(name, field string) (*BuiltinFunc, error) {
	for a, n := range aggregateNames {
		if n != "" && n == name {
			agg := Aggregate(a)
			if agg == CountAggregate && field != "" {
				return nil, &SpecError{Key: "window.field", Reason: "count counts records and takes no field"}
			}
			f := &BuiltinFunc{agg: agg, field: field}
			if field != "" {
				f.path = strings.Split(field, ".")
				for _, p := range f.path {
					if p == "" {
						return nil, &SpecError{Key: "window.field", Reason: fmt.Sprintf("%q has an empty path element", field)}
					}
				}
			}
			return f, nil
		}
	}
	return nil, &SpecError{Key: "window.aggregate", Reason: fmt.Sprintf("unknown aggregate %q (count, sum, min, max or mean)", name)}
}

// BuiltinFunc is a built-in aggregate over a field. Its accumulator is 16
// bytes: the record count and a float64 (the sum, minimum or maximum),
// both big-endian.
type BuiltinFunc struct {
	agg   Aggregate
	field string
	path  []string
	out   []byte // the accumulators of one call
}

var _ Accumulator = (*BuiltinFunc)(nil)

const builtinAccLen = 16

func decodeBuiltin(acc []byte) (uint64, float64, error) {
	if len(acc) != builtinAccLen {
		return 0, 0, fmt.Errorf("built-in accumulator %x: %w", acc, ErrCorrupt)
	}
	return binary.BigEndian.Uint64(acc), math.Float64frombits(binary.BigEndian.Uint64(acc[8:])), nil
}

func (f *BuiltinFunc) appendAcc(n uint64, v float64) []byte {
	f.out = binary.BigEndian.AppendUint64(f.out, n)
	f.out = binary.BigEndian.AppendUint64(f.out, math.Float64bits(v))
	return f.out[len(f.out)-builtinAccLen:]
}

func (f *BuiltinFunc) fold(n uint64, v, x float64) float64 {
	if n == 0 {
		return x
	}
	switch f.agg {
	case MinAggregate:
		return min(v, x)
	case MaxAggregate:
		return max(v, x)
	}
	return v + x
}

// Add folds each group's records.
func (f *BuiltinFunc) Add(_ context.Context, groups []Group) error {
	f.out = make([]byte, 0, len(groups)*builtinAccLen) // the Outs alias it until the next call
	for gi := range groups {
		g := &groups[gi]
		var n uint64
		var v float64
		if g.Acc != nil {
			var err error
			if n, v, err = decodeBuiltin(g.Acc); err != nil {
				return err
			}
		}
		g.Rejected = g.Rejected[:0]
		for i := range g.Recs {
			if f.agg == CountAggregate {
				n++
				continue
			}
			x, err := f.number(g.Recs[i].Value)
			if err != nil {
				g.Rejected = append(g.Rejected, Rejection{Index: i, Reason: err.Error()})
				continue
			}
			v = f.fold(n, v, x)
			n++
		}
		g.Out = f.appendAcc(n, v)
	}
	return nil
}

// Merge combines two accumulators.
func (f *BuiltinFunc) Merge(_ context.Context, pairs []Pair) error {
	f.out = make([]byte, 0, len(pairs)*builtinAccLen)
	for i := range pairs {
		p := &pairs[i]
		na, va, err := decodeBuiltin(p.A)
		if err != nil {
			return err
		}
		nb, vb, err := decodeBuiltin(p.B)
		if err != nil {
			return err
		}
		v := vb
		if na > 0 && nb > 0 {
			v = f.fold(na, va, vb)
		} else if nb == 0 {
			v = va
		}
		p.Out = f.appendAcc(na+nb, v)
	}
	return nil
}

// Fire emits each window's aggregate as a JSON object.
func (f *BuiltinFunc) Fire(_ context.Context, fires []Fire, emit func(int, abi.Record)) error {
	for i := range fires {
		fr := &fires[i]
		n, v, err := decodeBuiltin(fr.Acc)
		if err != nil {
			return err
		}
		b := make([]byte, 0, 96)
		b = append(b, `{"key":`...)
		b = appendJSONString(b, fr.Key)
		b = append(b, `,"start":`...)
		b = strconv.AppendInt(b, fr.Window.Start, 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, fr.Window.End, 10)
		b = append(b, `,"`...)
		b = append(b, f.agg.String()...)
		b = append(b, `":`...)
		switch f.agg {
		case CountAggregate:
			b = strconv.AppendUint(b, n, 10)
		case MeanAggregate:
			b = strconv.AppendFloat(b, v/float64(n), 'g', -1, 64)
		default:
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
		emit(i, abi.Record{Key: fr.Key, Value: append(b, '}')})
	}
	return nil
}

// number returns the number the aggregate reads from a record's value.
func (f *BuiltinFunc) number(value []byte) (float64, error) {
	if f.path == nil {
		s := string(bytes.TrimSpace(value))
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("%s: the value %q is not a number", f.agg, truncate(value))
		}
		return x, nil
	}
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return 0, fmt.Errorf("%s: field %s: the value is not JSON: %v", f.agg, f.field, err)
	}
	for i, p := range f.path {
		obj, ok := doc.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("%s: field %s: %s is not an object", f.agg, f.field, pathName(f.path[:i]))
		}
		if doc, ok = obj[p]; !ok {
			return 0, fmt.Errorf("%s: field %s is missing", f.agg, f.field)
		}
	}
	num, ok := doc.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: field %s is %s, not a number", f.agg, f.field, jsonKind(doc))
	}
	x, err := num.Float64()
	if err != nil || math.IsInf(x, 0) {
		return 0, fmt.Errorf("%s: field %s: %s is out of range", f.agg, f.field, num)
	}
	return x, nil
}

func pathName(p []string) string {
	if len(p) == 0 {
		return "the value"
	}
	return strings.Join(p, ".")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
// A key of printable ASCII that needs no escape, the usual kind, is
// appended as it is; any other goes through encoding/json.
func appendJSONString(dst, s []byte) []byte {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(string(s))
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
