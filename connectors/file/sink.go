package file

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// SinkConfig configures a Sink.
type SinkConfig struct {
	// Path of the file to write; created when missing. Required.
	Path string
	// Format of the lines; empty: JSONL.
	Format Format
	// Truncate empties the file when the sink opens it; by default the
	// sink appends.
	Truncate bool
	// WriteIDs adds each record's Out.ID as "id" (JSONL only), so that a
	// reader of the file can drop the duplicates a replay appends.
	WriteIDs bool
	// Perm is the mode of a file the sink creates; 0: 0644.
	Perm os.FileMode
	// Name overrides the sink's name; empty: "file:" + Path.
	Name string
}

// Sink appends records to a file, one per line.
type Sink struct {
	cfg     SinkConfig
	name    string
	f       *os.File
	w       *bufio.Writer
	line    []byte // encoding buffer, reused
	size    uint64 // bytes in the file after the last Flush
	pending uint64 // bytes written since the last Flush
	closed  bool
}

var (
	_ connectors.Rewindable = (*Sink)(nil)
	_ connectors.IDUser     = (*Sink)(nil)
)

// NewSink opens (or creates) the file of cfg for appending.
func NewSink(cfg SinkConfig) (*Sink, error) {
	if cfg.Path == "" {
		return nil, errors.New("file sink: Path is required")
	}
	format, err := cfg.Format.check()
	if err != nil {
		return nil, fmt.Errorf("file sink %s: %w", cfg.Path, err)
	}
	cfg.Format = format
	if cfg.Perm == 0 {
		cfg.Perm = 0o644
	}
	name := cfg.Name
	if name == "" {
		name = "file:" + cfg.Path
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if cfg.Truncate {
		flags |= os.O_TRUNC
	}
	// The file's directory is created as needed, as a user writing an
	// output path in a pipeline file expects.
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := os.OpenFile(cfg.Path, flags, cfg.Perm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Sink{cfg: cfg, name: name, f: f, w: bufio.NewWriterSize(f, 64<<10), size: uint64(st.Size())}, nil
}

// UsesIDs reports whether the sink writes each record's Out.ID (WriteIDs).
func (s *Sink) UsesIDs() bool { return s.cfg.WriteIDs }

// Offset returns the size of the file after the last Flush.
func (s *Sink) Offset() uint64 { return s.size }

// Rewind truncates the file to offset, dropping the lines a crashed run
// wrote after its last commit. It must be called before any Write. A file
// shorter than offset was changed by something else, and is an error.
func (s *Sink) Rewind(_ context.Context, offset uint64) error {
	if s.closed {
		return fmt.Errorf("%s: rewind: %w", s.name, connectors.ErrClosed)
	}
	if s.pending > 0 {
		return fmt.Errorf("%s: rewind after a write", s.name)
	}
	if offset > s.size {
		return fmt.Errorf("%s: the file has %d bytes, fewer than the %d committed: it was changed outside the pipeline; move it away to start it afresh", s.name, s.size, offset)
	}
	if offset == s.size {
		return nil
	}
	if err := s.f.Truncate(int64(offset)); err != nil {
		return fmt.Errorf("%s: rewind: %w", s.name, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("%s: rewind: %w", s.name, err)
	}
	s.size = offset
	return nil
}

// Name returns the sink's name.
func (s *Sink) Name() string { return s.name }

// Write encodes out into the sink's buffer, which goes to the file when it
// fills and at Flush.
func (s *Sink) Write(_ context.Context, out []connectors.Out) error {
	if s.closed {
		return fmt.Errorf("%s: write: %w", s.name, connectors.ErrClosed)
	}
	n, err := writeLines(s.w, &s.line, s.name, s.cfg.Format, s.cfg.WriteIDs, out)
	s.pending += n
	return err
}

// writeLines encodes each of out as a line of format f into w, through the
// reused buffer line, and returns the bytes written. Errors name the sink.
func writeLines(w *bufio.Writer, line *[]byte, name string, f Format, writeIDs bool, out []connectors.Out) (uint64, error) {
	var n uint64
	for i := range out {
		id := ""
		if writeIDs {
			id = out[i].ID
		}
		var err error
		if *line, err = appendLine((*line)[:0], f, &out[i].Record, id); err != nil {
			return n, fmt.Errorf("%s: record %d: %w", name, i, err)
		}
		if _, err := w.Write(*line); err != nil {
			return n, fmt.Errorf("%s: %w", name, err)
		}
		n += uint64(len(*line))
	}
	return n, nil
}

// appendLine appends rec as one line of format f, with the line ending;
// id is written in format JSONL only, when it is not empty.
func appendLine(dst []byte, f Format, rec *abi.Record, id string) ([]byte, error) {
	switch f {
	case Lines:
		if bytes.ContainsAny(rec.Value, "\r\n") {
			return dst, fmt.Errorf("a value with a line break cannot be written in the %q format (use %q)", Lines, JSONL)
		}
		return append(append(dst, rec.Value...), '\n'), nil
	case JSON:
		if !json.Valid(rec.Value) {
			return dst, fmt.Errorf("format %q writes values that are JSON, and this one is not (use %q)", JSON, JSONL)
		}
		if !bytes.ContainsAny(rec.Value, "\r\n") {
			return append(append(dst, rec.Value...), '\n'), nil
		}
		b := bytes.NewBuffer(dst)
		if err := json.Compact(b, rec.Value); err != nil {
			return dst, err
		}
		return append(b.Bytes(), '\n'), nil
	}
	return appendJSONRecord(dst, rec, id), nil
}

// WriterSinkConfig configures a WriterSink.
type WriterSinkConfig struct {
	// Format of the lines; empty: JSONL.
	Format Format
	// WriteIDs adds each record's Out.ID as "id" (JSONL only).
	WriteIDs bool
	// Name overrides the sink's name; empty: "stdout".
	Name string
}

// WriterSink writes records to a stream, such as standard output, one per
// line, in the formats of Sink. A stream cannot be taken back, so unlike
// Sink it is not rewindable: after a crash, what a replay writes again
// appears again (at least once).
type WriterSink struct {
	cfg    WriterSinkConfig
	name   string
	w      *bufio.Writer
	line   []byte
	closed bool
}

var _ connectors.IDUser = (*WriterSink)(nil)

// NewWriterSink returns a sink that writes to w. Close does not close w.
func NewWriterSink(w io.Writer, cfg WriterSinkConfig) (*WriterSink, error) {
	format, err := cfg.Format.check()
	if err != nil {
		return nil, fmt.Errorf("stream sink: %w", err)
	}
	cfg.Format = format
	name := cfg.Name
	if name == "" {
		name = "stdout"
	}
	return &WriterSink{cfg: cfg, name: name, w: bufio.NewWriterSize(w, 64<<10)}, nil
}

// Name returns the sink's name.
func (s *WriterSink) Name() string { return s.name }

// UsesIDs reports whether the sink writes each record's Out.ID (WriteIDs).
func (s *WriterSink) UsesIDs() bool { return s.cfg.WriteIDs }

// Write encodes out into the sink's buffer, which goes to the stream when
// it fills and at Flush.
func (s *WriterSink) Write(_ context.Context, out []connectors.Out) error {
	if s.closed {
		return fmt.Errorf("%s: write: %w", s.name, connectors.ErrClosed)
	}
	_, err := writeLines(s.w, &s.line, s.name, s.cfg.Format, s.cfg.WriteIDs, out)
	return err
}

// Flush writes the buffer to the stream.
func (s *WriterSink) Flush(context.Context) error {
	if s.closed {
		return fmt.Errorf("%s: flush: %w", s.name, connectors.ErrClosed)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// Close flushes the buffer; it does not close the stream.
func (s *WriterSink) Close() error {
	if s.closed {
		return nil
	}
	err := s.Flush(context.Background())
	s.closed = true
	return err
}

// Flush writes the buffer to the file and fsyncs it.
func (s *Sink) Flush(context.Context) error {
	if s.closed {
		return fmt.Errorf("%s: flush: %w", s.name, connectors.ErrClosed)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.size += s.pending
	s.pending = 0
	return nil
}

// Close flushes and closes the file.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	err := s.Flush(context.Background())
	s.closed = true
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", s.name, cerr)
	}
	return err
}

// appendJSONRecord appends rec as one jsonl line, ending in a newline.
func appendJSONRecord(dst []byte, rec *abi.Record, id string) []byte {
	dst = append(dst, '{')
	sep := false
	field := func(name string) {
		if sep {
			dst = append(dst, ',')
		}
		sep = true
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	if len(rec.Key) > 0 {
		if utf8.Valid(rec.Key) {
			field("key")
			dst = appendJSONString(dst, rec.Key)
		} else {
			field("key_base64")
			dst = appendBase64(dst, rec.Key)
		}
	}
	if utf8.Valid(rec.Value) {
		field("value")
		dst = appendJSONString(dst, rec.Value)
	} else {
		field("value_base64")
		dst = appendBase64(dst, rec.Value)
	}
	if rec.Time != 0 {
		field("time")
		dst = strconv.AppendInt(dst, rec.Time, 10)
	}
	// Headers whose values are text go under "headers", the others under
	// "headers_base64", so that binary values come back as they were.
	for _, b64 := range []bool{false, true} {
		n := 0
		for i := range rec.Headers {
			h := &rec.Headers[i]
			if utf8.Valid(h.Value) == b64 {
				continue
			}
			if n == 0 {
				name := "headers"
				if b64 {
					name = "headers_base64"
				}
				field(name)
				dst = append(dst, '{')
			} else {
				dst = append(dst, ',')
			}
			n++
			dst = appendJSONString(dst, bytes.ToValidUTF8(h.Name, []byte("\uFFFD")))
			dst = append(dst, ':')
			if b64 {
				dst = appendBase64(dst, h.Value)
			} else {
				dst = appendJSONString(dst, h.Value)
			}
		}
		if n > 0 {
			dst = append(dst, '}')
		}
	}
	if id != "" {
		field("id")
		dst = appendJSONString(dst, []byte(id))
	}
	return append(dst, '}', '\n')
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s, valid UTF-8, as a JSON string.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i, c := range s {
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
