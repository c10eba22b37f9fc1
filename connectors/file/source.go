package file

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// Format names a line format.
type Format string

// The formats this package reads and writes; see the package documentation.
const (
	// JSONL is one record per line in Sluice's record envelope, a JSON
	// object with "key", "value" (or "value_base64"), "time" and
	// "headers".
	JSONL Format = "jsonl"
	// JSON is one plain JSON value per line, which is the record's value
	// as it is; the key and the event time may be taken from its members.
	JSON Format = "json"
	// Lines is one record value per line.
	Lines Format = "lines"
)

func (f Format) check() (Format, error) {
	switch f {
	case "":
		return JSONL, nil
	case JSONL, JSON, Lines:
		return f, nil
	}
	return f, fmt.Errorf("unknown format %q (want %q, %q or %q)", string(f), JSONL, JSON, Lines)
}

// DefaultMaxLine is the default limit on the length of one line.
const DefaultMaxLine = 1 << 20

// SourceConfig configures a Source.
type SourceConfig struct {
	// Path of the file to read. Required, unless Reader is set; then it
	// only names the input in messages (default "stdin").
	Path string
	// Reader, when set, is read instead of a file: a stream such as
	// standard input, which cannot be read again. The source is then not
	// resumable; see the package documentation. Close does not close it.
	Reader io.Reader
	// Format of the lines; empty: JSONL.
	Format Format
	// KeyField locates the member of each line that gives the record's
	// key (ParseField); format JSON only. Empty: no key.
	KeyField string
	// TimeField locates the member of each line that gives the record's
	// event time (ParseField): an RFC 3339 string or a number of TimeUnit
	// since the Unix epoch; format JSON only. Empty: time 0.
	TimeField string
	// TimeUnit is the unit of a numeric TimeField; empty: DefaultTimeUnit
	// (milliseconds).
	TimeUnit TimeUnit
	// MaxLine is the longest line accepted, in bytes, without its line
	// ending; 0: DefaultMaxLine (1 MiB). A longer line becomes a message
	// with Err wrapping connectors.ErrTooLarge, and is not held in memory
	// beyond MaxLine bytes.
	MaxLine int
	// Name overrides the source's name; empty: "file:" + Path.
	Name string
}

// Source reads records from a file, one per line. It is finite (Read
// returns io.EOF at the end of the file) and resumable (positions are line
// numbers). Reading a stream (SourceConfig.Reader) instead, it is finite
// but not resumable.
type Source struct {
	cfg       SourceConfig
	name      string
	where     string // names the input in messages: the path, or "stdin"
	key, time *Field

	mu    sync.Mutex // guards state and f, so that Close may interrupt
	state int        // 0 new, 1 open, 2 closed
	f     *os.File
	stop  chan struct{} // closed by Close

	// Read's goroutine only (a stream's reading goroutine for a stream:
	// r, line, eof, linebf).
	r      *bufio.Reader
	line   uint64 // number of the last line read
	eof    bool
	err    error // a read error, returned once what was read before it is
	linebf []byte

	// A stream's lines, from its reading goroutine, and the position of
	// its line 0: the position Open was given.
	lines chan streamLine
	base  uint64
}

// streamLine is one line of a stream, or its end (err io.EOF) or failure.
type streamLine struct {
	text   []byte // at most MaxLine bytes, owned
	length int
	cut    bool
	num    uint64
	err    error
}

var _ connectors.Source = (*Source)(nil)

// NewSource returns a source for cfg; Open opens the file.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Path == "" && cfg.Reader == nil {
		return nil, errors.New("file source: Path is required")
	}
	where := cfg.Path
	if where == "" {
		where = "stdin"
	}
	f, err := cfg.Format.check()
	if err != nil {
		return nil, fmt.Errorf("file source %s: %w", where, err)
	}
	cfg.Format = f
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	s := &Source{cfg: cfg, where: where, stop: make(chan struct{})}
	for _, fl := range []struct {
		key, text string
		dst       **Field
	}{{"KeyField", cfg.KeyField, &s.key}, {"TimeField", cfg.TimeField, &s.time}} {
		if fl.text == "" {
			continue
		}
		if f != JSON {
			return nil, fmt.Errorf("file source %s: %s applies to format %q only, not %q", where, fl.key, JSON, f)
		}
		field, err := ParseField(fl.text)
		if err != nil {
			return nil, fmt.Errorf("file source %s: %s: %w", where, fl.key, err)
		}
		*fl.dst = &field
	}
	if s.cfg.TimeUnit, err = CheckTimeUnit(cfg.TimeUnit); err != nil {
		return nil, fmt.Errorf("file source %s: %w", where, err)
	}
	s.name = cfg.Name
	if s.name == "" {
		s.name = "file:" + where
	}
	return s, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Resumable reports whether positions are line numbers of a file, which
// Open can skip to: true, unless the source reads a stream.
func (s *Source) Resumable() bool { return s.cfg.Reader == nil }

// Open opens the file and skips its first after lines. A stream is not
// skipped: its lines take the positions after+1, after+2...
func (s *Source) Open(ctx context.Context, after uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case 1:
		return fmt.Errorf("%s: already open", s.name)
	case 2:
		return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
	}
	if s.cfg.Reader != nil {
		s.r, s.state, s.base = bufio.NewReaderSize(s.cfg.Reader, 64<<10), 1, after
		s.lines = make(chan streamLine, 256)
		go s.readStream()
		return nil
	}
	f, err := os.Open(s.cfg.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.f, s.r, s.state = f, bufio.NewReaderSize(f, 64<<10), 1
	for s.line < after {
		if s.line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if _, _, err := s.next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the file is shorter than after: nothing to read
			}
			return fmt.Errorf("%s:%d: %w", s.cfg.Path, s.line+1, err)
		}
	}
	return nil
}

// readStream reads a stream's lines and hands them to Read until the
// stream ends or fails, or the source is closed. A read that blocks keeps
// it until the stream gives a line or ends, after Close too: a stream
// cannot be interrupted.
func (s *Source) readStream() {
	for {
		length, cut, err := s.next()
		l := streamLine{text: bytes.Clone(s.linebf), length: length, cut: cut, num: s.line, err: err}
		if err != nil {
			l.text = nil
			if !errors.Is(err, io.EOF) {
				l.err = fmt.Errorf("%s:%d: %w", s.where, s.line+1, err)
			}
		} else if l.text == nil {
			l.text = []byte{}
		}
		select {
		case s.lines <- l:
		case <-s.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// next reads the next line into s.linebf, without its line ending, keeping
// at most MaxLine bytes; it returns the line's full length and whether it
// was cut. It returns io.EOF when there is no further line.
func (s *Source) next() (length int, cut bool, err error) {
	s.linebf = s.linebf[:0]
	if s.eof {
		return 0, false, io.EOF
	}
	read, ended := false, false
	var prev byte // the last byte of the previous chunk
	for {
		chunk, rerr := s.r.ReadSlice('\n')
		if len(chunk) > 0 {
			read = true
		}
		length += len(chunk)
		if room := s.cfg.MaxLine + 2 - len(s.linebf); room > 0 { // +2: the line ending
			s.linebf = append(s.linebf, chunk[:min(len(chunk), room)]...)
		}
		if rerr == nil {
			ended = true
			// Drop "\n" or "\r\n" from the length.
			length--
			if n := len(chunk); n >= 2 && chunk[n-2] == '\r' || n == 1 && prev == '\r' {
				length--
			}
			break
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			prev = chunk[len(chunk)-1]
			continue
		}
		if errors.Is(rerr, io.EOF) {
			s.eof = true
			if !read {
				return 0, false, io.EOF
			}
			break
		}
		return 0, false, rerr
	}
	s.line++
	if length > s.cfg.MaxLine {
		s.linebf = s.linebf[:min(len(s.linebf), s.cfg.MaxLine)]
		return length, true, nil
	}
	if ended {
		s.linebf = s.linebf[:length]
	}
	return length, false, nil
}

// Read decodes the next lines, up to len(buf) records. It returns io.EOF
// once the file, or the stream, is exhausted. Reading a stream, it waits
// for the first line until ctx is done or the source is closed.
func (s *Source) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	switch state {
	case 0:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrNotOpen)
	case 2:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.cfg.Reader != nil {
		return s.readLines(ctx, buf)
	}
	n := 0
	for n < len(buf) {
		if s.err != nil {
			break
		}
		length, cut, err := s.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.err = fmt.Errorf("%s:%d: %w", s.cfg.Path, s.line+1, err)
			break
		}
		if s.decode(&buf[n], s.line, s.line, s.linebf, length, cut) {
			n++
		}
	}
	switch {
	case n > 0:
		return n, nil
	case s.err != nil:
		return 0, s.err
	}
	return 0, io.EOF
}

// readLines is Read for a stream: it blocks for the first line, then takes
// the lines the reading goroutine has ready.
func (s *Source) readLines(ctx context.Context, buf []connectors.Message) (int, error) {
	n := 0
	for n < len(buf) && s.err == nil {
		var l streamLine
		if n == 0 {
			select {
			case l = <-s.lines:
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-s.stop:
				return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
			}
		} else {
			select {
			case l = <-s.lines:
			default:
				return n, nil
			}
		}
		if l.err != nil {
			s.err = l.err
			break
		}
		if s.decode(&buf[n], l.num, s.base+l.num, l.text, l.length, l.cut) {
			n++
		}
	}
	if n > 0 {
		return n, nil
	}
	return 0, s.err
}

// decode makes m the record of line number num at position pos, whose
// text (at most MaxLine bytes) is line, of length bytes in all, cut when
// it was longer than MaxLine. It reports false for a blank line of a JSON
// format, which is skipped. line is copied, or kept when it came from a
// stream.
func (s *Source) decode(m *connectors.Message, num, pos uint64, line []byte, length int, cut bool) bool {
	*m = connectors.Message{Position: pos}
	own := func() []byte {
		if s.cfg.Reader != nil {
			return line
		}
		if b := bytes.Clone(line); b != nil {
			return b
		}
		return []byte{}
	}
	switch {
	case cut:
		m.Record.Value = own()
		m.Err = fmt.Errorf("%s:%d: line of %d bytes is over the limit of %d bytes (max_line_bytes): %w", s.where, num, length, s.cfg.MaxLine, connectors.ErrTooLarge)
	case s.cfg.Format == Lines:
		m.Record.Value = own()
	default:
		if len(bytes.TrimSpace(line)) == 0 {
			return false // blank line
		}
		var err error
		if s.cfg.Format == JSON {
			err = s.decodePlain(line, &m.Record)
		} else {
			err = decodeJSON(line, &m.Record)
		}
		if err != nil {
			m.Record = abi.Record{Value: own()}
			m.Err = fmt.Errorf("%s:%d: %w", s.where, num, err)
			return true
		}
		if s.cfg.Format == JSON {
			m.Record.Value = own()
		}
	}
	return true
}

// decodePlain decodes one line of format JSON into rec, but for its value,
// which is the line itself: its key and time are the members KeyField and
// TimeField locate. Errors wrap connectors.ErrMalformed.
func (s *Source) decodePlain(line []byte, rec *abi.Record) error {
	*rec = abi.Record{}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v) // says what is wrong
		return fmt.Errorf("invalid JSON: %v: %w", err, connectors.ErrMalformed)
	}
	if s.key != nil {
		v, err := s.key.lookup(line)
		if err == nil {
			rec.Key, err = keyBytes(v)
		}
		if err != nil {
			return fieldError("key_field", *s.key, err)
		}
	}
	if s.time != nil {
		v, err := s.time.lookup(line)
		if err == nil {
			rec.Time, err = eventTime(v, s.cfg.TimeUnit)
		}
		if err != nil {
			return fieldError("time_field", *s.time, err)
		}
	}
	return nil
}

// fieldError says what is wrong with the member a field locates, naming
// the field by its pipeline key.
func fieldError(key string, f Field, err error) error {
	sep := " "
	if !strings.HasPrefix(err.Error(), "is ") {
		sep = ": "
	}
	return fmt.Errorf("%s %s%s%v: %w", key, f, sep, err, connectors.ErrMalformed)
}

// Ack does nothing: a file needs no acknowledgement.
func (s *Source) Ack(context.Context, uint64) error { return nil }

// Close closes the file. It may be called while Read runs, which then
// fails. A stream is not closed: the goroutine reading it ends with its
// next line or its end.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == 2 {
		return nil
	}
	s.state = 2
	close(s.stop)
	if s.f != nil {
		if err := s.f.Close(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// jsonRecord is a line of the jsonl format.
type jsonRecord struct {
	Key         *string           `json:"key"`
	KeyBase64   []byte            `json:"key_base64"`
	Value       *string           `json:"value"`
	ValueBase64 []byte            `json:"value_base64"`
	Time        json.RawMessage   `json:"time"`
	Headers     map[string]string `json:"headers"`
	// HeadersBase64 holds the headers whose values are not UTF-8 text.
	HeadersBase64 map[string][]byte `json:"headers_base64"`
	ID            string            `json:"id"`
}

// decodeJSON decodes one jsonl line into rec. Errors wrap
// connectors.ErrMalformed.
func decodeJSON(line []byte, rec *abi.Record) error {
	var jr jsonRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jr); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			// A plain JSON object read as the envelope.
			return fmt.Errorf(`%v: format jsonl reads Sluice's record envelope ("key", "value" or "value_base64", "time", "headers"); `+
				`for plain JSON objects set format: json (key_field and time_field take the key and time from members): %w`,
				strings.TrimPrefix(err.Error(), "json: "), connectors.ErrMalformed)
		}
		return fmt.Errorf("invalid JSON: %v: %w", err, connectors.ErrMalformed)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("invalid JSON: text after the object: %w", connectors.ErrMalformed)
	}
	*rec = abi.Record{}
	switch {
	case jr.Value != nil && jr.ValueBase64 != nil:
		return fmt.Errorf(`both "value" and "value_base64": %w`, connectors.ErrMalformed)
	case jr.Value != nil:
		rec.Value = []byte(*jr.Value)
	case jr.ValueBase64 != nil:
		rec.Value = jr.ValueBase64
	default:
		return fmt.Errorf(`missing "value" (or "value_base64"): %w`, connectors.ErrMalformed)
	}
	switch {
	case jr.Key != nil && jr.KeyBase64 != nil:
		return fmt.Errorf(`both "key" and "key_base64": %w`, connectors.ErrMalformed)
	case jr.Key != nil && *jr.Key != "":
		rec.Key = []byte(*jr.Key)
	case len(jr.KeyBase64) > 0:
		rec.Key = jr.KeyBase64
	}
	t, err := parseTime(jr.Time)
	if err != nil {
		return err
	}
	rec.Time = t
	if len(jr.Headers)+len(jr.HeadersBase64) > 0 {
		names := make([]string, 0, len(jr.Headers)+len(jr.HeadersBase64))
		for name := range jr.Headers {
			names = append(names, name)
		}
		for name := range jr.HeadersBase64 {
			if _, ok := jr.Headers[name]; ok {
				return fmt.Errorf(`header %q both in "headers" and in "headers_base64": %w`, name, connectors.ErrMalformed)
			}
			names = append(names, name)
		}
		slices.Sort(names)
		rec.Headers = make([]abi.Header, len(names))
		for i, name := range names {
			v, ok := jr.HeadersBase64[name]
			if !ok {
				v = []byte(jr.Headers[name])
			}
			rec.Headers[i] = abi.Header{Name: []byte(name), Value: v}
		}
	}
	return nil
}

// parseTime reads "time": integer nanoseconds or an RFC 3339 string.
func parseTime(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf(`"time": %v: %w`, err, connectors.ErrMalformed)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf(`"time": %q is not an RFC 3339 time: %w`, s, connectors.ErrMalformed)
		}
		return t.UnixNano(), nil
	}
	t, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf(`"time": want integer nanoseconds or an RFC 3339 string, got %s: %w`, raw, connectors.ErrMalformed)
	}
	return t, nil
}
