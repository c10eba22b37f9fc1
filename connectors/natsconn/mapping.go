package natsconn

import (
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
	// way every time (replays must be deterministic).
	names := make([]string, 0, len(hdr))
	for name := range hdr {
		if name != HeaderKey && name != HeaderTime && !strings.HasPrefix(name, reservedPrefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	rec.Headers = make([]abi.Header, 0, n)
	for _, name := range names {
		bname := []byte(name)
		for _, v := range hdr[name] {
			rec.Headers = append(rec.Headers, abi.Header{Name: bname, Value: []byte(v)})
		}
	}
	return err
}

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
		name := string(rec.Headers[i].Name)
		if strings.HasPrefix(name, reservedPrefix) || name == HeaderKey || name == HeaderTime {
			continue
		}
		h[name] = append(h[name], string(rec.Headers[i].Value))
	}
	if len(rec.Key) > 0 {
		h[HeaderKey] = []string{string(rec.Key)}
	}
	if mp.Time {
		h[HeaderTime] = []string{strconv.FormatInt(rec.Time, 10)}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}
