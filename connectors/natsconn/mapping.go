package natsconn

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// Header names of the record mapping (see the connectors package).
const (
	// HeaderKey carries the record key.
	HeaderKey = "Sluice-Key"
	// HeaderTime carries the event time in decimal nanoseconds since the
	// Unix epoch.
	HeaderTime = "Sluice-Time"
	// HeaderKeyBase64 carries, in standard base64, a record key that a NATS
	// header cannot carry as it is (see headerSafe), in place of
	// HeaderKey.
	HeaderKeyBase64 = "Sluice-Key-Base64"
	// HeaderBase64Prefix starts the name of a record header whose value a
	// NATS header cannot carry as it is, or whose name starts with the
	// prefix itself: the rest of the name is the header's, the value its
	// value in standard base64.
	HeaderBase64Prefix = "Sluice-Base64-"
	// reservedPrefix starts the names of NATS control headers, which are
	// never mapped to or from record headers.
	reservedPrefix = "Nats-"
)

// Mapping says what a sink publishes besides the record value. The zero
// value publishes the key and headers when a record has them, and no event
// time.
type Mapping struct {
	// Time adds the Sluice-Time header to every message, so a downstream
	// pipeline sees the same event time. Off by default: it costs a header
	// block on every message.
	Time bool
	// ValueOnly publishes the value alone, dropping key, headers and time:
	// every message is plain, the fastest path.
	ValueOnly bool
}

// decodeMsg fills rec from a message's payload and header. Value aliases
// data, which the NATS client allocates per message, so rec owns its bytes.
// defaultTime is the event time used when there is no Sluice-Time header.
// The error, if any, wraps connectors.ErrMalformed; rec.Value is set even
// then.
func decodeMsg(data []byte, hdr nats.Header, defaultTime int64, rec *abi.Record) error {
	*rec = abi.Record{Time: defaultTime, Value: data}
	if len(hdr) == 0 {
		return nil
	}
	var err error
	n := 0
	for name, vals := range hdr {
		switch {
		case name == HeaderKey:
			if len(vals) > 0 {
				rec.Key = []byte(vals[0])
			}
		case name == HeaderKeyBase64:
			if len(vals) > 0 {
				k, derr := base64.StdEncoding.DecodeString(vals[0])
				if derr != nil {
					err = fmt.Errorf("header %s %q is not standard base64: %w", HeaderKeyBase64, vals[0], connectors.ErrMalformed)
				} else {
					rec.Key = k
				}
			}
		case name == HeaderTime:
			if len(vals) > 0 {
				t, perr := strconv.ParseInt(vals[0], 10, 64)
				if perr != nil {
					err = fmt.Errorf("header %s %q is not decimal nanoseconds: %w", HeaderTime, vals[0], connectors.ErrMalformed)
				} else {
					rec.Time = t
				}
			}
		case strings.HasPrefix(name, reservedPrefix):
		default:
			n += len(vals)
		}
	}
	if n == 0 {
		return err
	}
	// Map order is random: sort by name so that a record decodes the same
	// way every time (replays must be deterministic); a header carried in
	// base64 sorts by its own name, after those of that name carried as
	// they are.
	names := make([]string, 0, len(hdr))
	for name := range hdr {
		if name != HeaderKey && name != HeaderKeyBase64 && name != HeaderTime && !strings.HasPrefix(name, reservedPrefix) {
			names = append(names, name)
		}
	}
	own := func(name string) string { return strings.TrimPrefix(name, HeaderBase64Prefix) }
	encoded := func(name string) bool { return strings.HasPrefix(name, HeaderBase64Prefix) }
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(strings.Compare(own(a), own(b)), cmp.Compare(btoi(encoded(a)), btoi(encoded(b))))
	})
	rec.Headers = make([]abi.Header, 0, n)
	for _, name := range names {
		bname := []byte(own(name))
		for _, v := range hdr[name] {
			val := []byte(v)
			if encoded(name) {
				d, derr := base64.StdEncoding.DecodeString(v)
				if derr != nil {
					err = cmp.Or(err, fmt.Errorf("header %s %q is not standard base64: %w", name, v, connectors.ErrMalformed))
					continue
				}
				val = d
			}
			rec.Headers = append(rec.Headers, abi.Header{Name: bname, Value: val})
		}
	}
	return err
}

// headerSafe reports whether a NATS header carries v as it is: the
// client replaces line breaks with spaces, and the parser trims the spaces
// and tabs around a value.
func headerSafe(v []byte) bool {
	if len(v) > 0 && (isBlank(v[0]) || isBlank(v[len(v)-1])) {
		return false
	}
	return !bytes.ContainsAny(v, "\r\n")
}

// btoi returns 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isBlank reports whether c is trimmed from around a header's value.
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// needsHeaders reports whether rec publishes with a header block under mp.
func (mp Mapping) needsHeaders(rec *abi.Record) bool {
	if mp.ValueOnly {
		return false
	}
	return mp.Time || len(rec.Key) > 0 || len(rec.Headers) > 0
}

// header builds the header block of rec under mp; nil when none is needed.
// Record headers whose names begin with "Nats-" are left out.
func (mp Mapping) header(rec *abi.Record) nats.Header {
	if !mp.needsHeaders(rec) {
		return nil
	}
	h := make(nats.Header, len(rec.Headers)+2)
	for i := range rec.Headers {
		name, v := string(rec.Headers[i].Name), rec.Headers[i].Value
		if strings.HasPrefix(name, reservedPrefix) || name == HeaderKey || name == HeaderKeyBase64 || name == HeaderTime {
			continue
		}
		if !headerSafe(v) || strings.HasPrefix(name, HeaderBase64Prefix) {
			name = HeaderBase64Prefix + name
			h[name] = append(h[name], base64.StdEncoding.EncodeToString(v))
			continue
		}
		h[name] = append(h[name], string(v))
	}
	switch {
	case len(rec.Key) == 0:
	case headerSafe(rec.Key):
		h[HeaderKey] = []string{string(rec.Key)}
	default:
		h[HeaderKeyBase64] = []string{base64.StdEncoding.EncodeToString(rec.Key)}
	}
	if mp.Time {
		h[HeaderTime] = []string{strconv.FormatInt(rec.Time, 10)}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}
