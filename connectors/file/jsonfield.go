package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Field locates a member of a JSON document: the key or the event time of a
// record read in format JSON. ParseField makes one.
type Field struct {
	text string   // as written
	segs []string // member names or array indices, outermost first
}

// ParseField parses a member's location, written either as a JSON pointer
// (RFC 6901: "/user/id", with "~1" for a "/" and "~0" for a "~" in a member
// name) or as a dotted path ("user.id"). A segment of digits also indexes
// an array ("/items/0", "items.0"). The error says what is wrong with s.
func ParseField(s string) (Field, error) {
	f := Field{text: s}
	switch {
	case s == "":
		return f, errors.New("empty: want a JSON pointer such as /user/id or a dotted path such as user.id")
	case s[0] == '/':
		for _, seg := range strings.Split(s[1:], "/") {
			if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(seg, "~0", ""), "~1", ""), "~") {
				return f, fmt.Errorf("%q: a ~ in a JSON pointer must be written ~0 (and a / in a name ~1)", s)
			}
			f.segs = append(f.segs, strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~"))
		}
	default:
		for seg := range strings.SplitSeq(s, ".") {
			if seg == "" {
				return f, fmt.Errorf("%q: a dotted path has a name between each two dots (write a JSON pointer, /a/b, for names that hold dots or are empty)", s)
			}
			f.segs = append(f.segs, seg)
		}
	}
	return f, nil
}

// String returns the field as it was written.
func (f Field) String() string { return f.text }

// lookup returns the JSON text of the member at f in doc, which must be
// valid JSON (json.Valid). A member that is missing, or below a value that
// is neither an object nor an array, is an error that says which.
func (f Field) lookup(doc []byte) ([]byte, error) {
	cur := doc[skipSpace(doc, 0):]
	for i, seg := range f.segs {
		var found bool
		switch cur[0] {
		case '{':
			cur, found = member(cur, seg)
		case '[':
			if n, err := strconv.Atoi(seg); err == nil && n >= 0 {
				cur, found = element(cur, n)
			}
		default:
			if i == 0 {
				return nil, fmt.Errorf("the line is %s, not an object", jsonKind(cur))
			}
			return nil, fmt.Errorf("%s is %s, not an object or array", f.prefix(i), jsonKind(cur))
		}
		if !found {
			return nil, errors.New("is missing")
		}
	}
	return cur, nil
}

// The functions below scan valid JSON without decoding it: they find a
// member's value in a line without allocating.

// skipSpace returns the index of the first byte at or after i in b that is
// not white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the index just past the value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipValue(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}

// member returns the value of the member name of the object obj; of the
// last one, when the name is given twice, as encoding/json decodes it.
func member(obj []byte, name string) (val []byte, ok bool) {
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] == '"' {
		kEnd := skipValue(obj, i)
		vStart := skipSpace(obj, skipSpace(obj, kEnd)+1) // past the ':'
		vEnd := skipValue(obj, vStart)
		if keyIs(obj[i:kEnd], name) {
			val, ok = obj[vStart:vEnd], true
		}
		i = skipSpace(obj, vEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return val, ok
}

// keyIs reports whether the JSON string key is name.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1:len(key)-1]) == name
	}
	var k string
	return json.Unmarshal(key, &k) == nil && k == name
}

// element returns element n of the array arr.
func element(arr []byte, n int) ([]byte, bool) {
	i := skipSpace(arr, 1)
	for k := 0; i < len(arr) && arr[i] != ']'; k++ {
		end := skipValue(arr, i)
		if k == n {
			return arr[i:end], true
		}
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return nil, false
}

// prefix writes the first n segments of f the way f is written.
func (f Field) prefix(n int) string {
	if strings.HasPrefix(f.text, "/") {
		var b strings.Builder
		for _, s := range f.segs[:n] {
			b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
		}
		return b.String()
	}
	return strings.Join(f.segs[:n], ".")
}

// jsonKind names the kind of the JSON value v, with an article.
func jsonKind(v []byte) string {
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// keyBytes returns the record key a member's JSON value v gives: the text
// of a string, the JSON text of a number or boolean.
func keyBytes(v []byte) ([]byte, error) {
	switch {
	case len(v) > 0 && v[0] == '"':
		if bytes.IndexByte(v, '\\') < 0 {
			return bytes.Clone(v[1 : len(v)-1]), nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9' || v[0] == 't' || v[0] == 'f'):
		return bytes.Clone(v), nil
	}
	return nil, fmt.Errorf("is %s: want a string or a number", jsonKind(v))
}

// TimeUnit is the unit of an event time written as a number.
type TimeUnit string

// Time units.
const (
	Nanoseconds  TimeUnit = "ns"
	Microseconds TimeUnit = "us"
	Milliseconds TimeUnit = "ms"
	Seconds      TimeUnit = "s"
)

// DefaultTimeUnit is the unit of numeric times in format JSON when none is
// given: milliseconds since the Unix epoch, as most JSON producers write
// them (JavaScript's Date.now(), Kafka, Flink).
const DefaultTimeUnit = Milliseconds

// nanos returns the nanoseconds in one u, or 0 for an unknown unit.
func (u TimeUnit) nanos() int64 {
	switch u {
	case Nanoseconds:
		return 1
	case Microseconds:
		return int64(time.Microsecond)
	case Milliseconds:
		return int64(time.Millisecond)
	case Seconds:
		return int64(time.Second)
	}
	return 0
}

// CheckTimeUnit returns u, or DefaultTimeUnit for "", or an error naming the
// units there are.
func CheckTimeUnit(u TimeUnit) (TimeUnit, error) {
	if u == "" {
		return DefaultTimeUnit, nil
	}
	if u.nanos() == 0 {
		return u, fmt.Errorf("unknown time unit %q (want ns, us, ms or s)", string(u))
	}
	return u, nil
}

// eventTime returns the event time, in nanoseconds since the Unix epoch,
// that a member's JSON value v gives: an RFC 3339 string, or a number (or
// a string of digits) of unit u since the epoch, fractions allowed.
func eventTime(v []byte, u TimeUnit) (int64, error) {
	num := string(v)
	if len(v) > 0 && v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return 0, err
		}
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UnixNano(), nil
		}
		if !isJSONNumber(s) {
			return 0, fmt.Errorf("%q is not an RFC 3339 time (such as 2024-05-01T12:00:00Z) or a number of %s", s, unitWords(u))
		}
		num = s
	} else if !isJSONNumber(num) {
		return 0, fmt.Errorf("is %s: want an RFC 3339 string or a number of %s", jsonKind(v), unitWords(u))
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if ns := n * u.nanos(); ns/u.nanos() == n {
			return ns, nil
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", num)
	}
	r.Mul(r, new(big.Rat).SetInt64(u.nanos()))
	ns := new(big.Int).Quo(r.Num(), r.Denom()) // toward zero: whole nanoseconds
	if !ns.IsInt64() || ns.Int64() == math.MinInt64 {
		return 0, fmt.Errorf("%s %s is out of range (is time_unit %s right?)", num, unitWords(u), u)
	}
	return ns.Int64(), nil
}

// isJSONNumber reports whether s is a number as JSON writes it.
func isJSONNumber(s string) bool {
	return s != "" && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && json.Valid([]byte(s))
}

func unitWords(u TimeUnit) string {
	return map[TimeUnit]string{
		Nanoseconds: "nanoseconds", Microseconds: "microseconds", Milliseconds: "milliseconds", Seconds: "seconds",
	}[u] + " since the Unix epoch"
}
