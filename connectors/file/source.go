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
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// Format names a line format.
type Format string

// The formats this package reads and writes; see the package documentation.
const (
	// JSONL is one JSON object per line.
	JSONL Format = "jsonl"
	// Lines is one record value per line.
	Lines Format = "lines"
)

func (f Format) check() (Format, error) {
	switch f {
	case "":
		return JSONL, nil
	case JSONL, Lines:
		return f, nil
	}
	return f, fmt.Errorf("unknown format %q (want %q or %q)", string(f), JSONL, Lines)
}

// DefaultMaxLine is the default limit on the length of one line.
const DefaultMaxLine = 1 << 20

// SourceConfig configures a Source.
type SourceConfig struct {
	// Path of the file to read. Required.
	Path string
	// Format of the lines; empty: JSONL.
	Format Format
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
// numbers).
type Source struct {
	cfg  SourceConfig
	name string

	mu    sync.Mutex // guards state and f, so that Close may interrupt
	state int        // 0 new, 1 open, 2 closed
	f     *os.File

	// Read's goroutine only.
	r      *bufio.Reader
	line   uint64 // number of the last line read
	eof    bool
	err    error // a read error, returned once what was read before it is
	linebf []byte
}

var _ connectors.Source = (*Source)(nil)

// NewSource returns a source for cfg; Open opens the file.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Path == "" {
		return nil, errors.New("file source: Path is required")
	}
	f, err := cfg.Format.check()
	if err != nil {
		return nil, fmt.Errorf("file source %s: %w", cfg.Path, err)
	}
	cfg.Format = f
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	name := cfg.Name
	if name == "" {
		name = "file:" + cfg.Path
	}
	return &Source{cfg: cfg, name: name}, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Resumable returns true: positions are line numbers.
func (s *Source) Resumable() bool { return true }

// Open opens the file and skips its first after lines.
func (s *Source) Open(ctx context.Context, after uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case 1:
		return fmt.Errorf("%s: already open", s.name)
	case 2:
		return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
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
// once the file is exhausted.
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
		m := &buf[n]
		*m = connectors.Message{Position: s.line}
		switch {
		case cut:
			m.Record.Value = bytes.Clone(s.linebf)
			m.Err = fmt.Errorf("%s:%d: line of %d bytes is over the %d-byte limit: %w", s.cfg.Path, s.line, length, s.cfg.MaxLine, connectors.ErrTooLarge)
		case s.cfg.Format == Lines:
			m.Record.Value = bytes.Clone(s.linebf)
			if m.Record.Value == nil {
				m.Record.Value = []byte{}
			}
		default:
			if len(bytes.TrimSpace(s.linebf)) == 0 {
				continue // blank line
			}
			if err := decodeJSON(s.linebf, &m.Record); err != nil {
				m.Record = abi.Record{Value: bytes.Clone(s.linebf)}
				m.Err = fmt.Errorf("%s:%d: %w", s.cfg.Path, s.line, err)
			}
		}
		n++
	}
	switch {
	case n > 0:
		return n, nil
	case s.err != nil:
		return 0, s.err
	}
	return 0, io.EOF
}

// Ack does nothing: a file needs no acknowledgement.
func (s *Source) Ack(context.Context, uint64) error { return nil }

// Close closes the file. It may be called while Read runs, which then
// fails.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == 2 {
		return nil
	}
	s.state = 2
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
	ID          string            `json:"id"`
}

// decodeJSON decodes one jsonl line into rec. Errors wrap
// connectors.ErrMalformed.
func decodeJSON(line []byte, rec *abi.Record) error {
	var jr jsonRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jr); err != nil {
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
	if len(jr.Headers) > 0 {
		names := make([]string, 0, len(jr.Headers))
		for name := range jr.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		rec.Headers = make([]abi.Header, len(names))
		for i, name := range names {
			rec.Headers[i] = abi.Header{Name: []byte(name), Value: []byte(jr.Headers[name])}
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
