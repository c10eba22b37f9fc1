// Package file reads and writes records as lines of a file or a stream: a
// finite Source for replaying recorded input, feeding examples and tests,
// or reading standard input, and a Sink (WriterSink for standard output)
// for capturing output.
//
// # Formats
//
// Format "jsonl" (JSON Lines) holds one JSON object per line:
//
//	{"key": "user-7", "value": "clicked", "time": 1700000000000000000, "headers": {"origin": "web"}}
//	{"value_base64": "AAEC/w==", "time": "2023-11-14T22:13:20.5Z"}
//
// The members are:
//
//   - "value" (string): the record value, as UTF-8 text. Required, unless
//     "value_base64" (string, standard base64 with padding) gives it
//     instead, for binary values. Exactly one of the two must be present.
//   - "key" (string): the record key; absent or "" means no key.
//     "key_base64" gives a binary key instead; at most one of the two.
//   - "time": the event time, either an integer number of nanoseconds since
//     the Unix epoch or an RFC 3339 string (fractional seconds allowed);
//     absent or null means 0, no event time. The source does not substitute
//     the time of reading, so that a replay decodes the same records.
//   - "headers" (object of strings): record headers. The source orders them
//     by name; JSON objects cannot repeat a name, so a record with two
//     headers of the same name keeps the last. "headers_base64" (object of
//     base64 strings) gives headers with binary values; a name may not be
//     in both.
//   - "id" (string): ignored by the source; written by a sink configured
//     with WriteIDs, so that a consumer of the file can drop replays.
//
// Any other member, a value of the wrong type, or text that is not one JSON
// object makes the line malformed; a line with a member that is not one of
// these is told that format "json" reads plain JSON. Blank lines are
// skipped.
//
// Format "json" reads plain JSON, as most producers write it: each line is
// one JSON value (an object, usually), which is the record's value, byte
// for byte. The key and the event time are taken from members the source
// is configured with (KeyField, TimeField), each written as a JSON pointer
// ("/user/id", RFC 6901) or a dotted path ("user.id"); a segment of digits
// also indexes an array. The key is the text of a string member, or the
// JSON text of a number or boolean. The time is an RFC 3339 string, or a
// number (or a string of digits) of TimeUnit since the Unix epoch:
// milliseconds unless configured ("ns", "us", "ms", "s"), fractions
// allowed. Without KeyField there is no key, without TimeField the time is
// 0. A line that is not JSON, or whose configured member is missing or of
// the wrong type, is malformed, and its error names the member:
//
//	events.json:12: key_field /user/id is missing
//	events.json:13: time_field /ts: "yesterday" is not an RFC 3339 time (such as 2024-05-01T12:00:00Z) or a number of milliseconds since the Unix epoch
//
// Format "lines" makes each line the value of one record, with no key, no
// headers and time 0. The line ending ("\n" or "\r\n") is not part of the
// value; an empty line is a record with an empty value.
//
// # Positions and errors
//
// A record's position is its line number, counting from 1, so the source
// resumes exactly: Open(after) skips lines 1 to after. A line that cannot be
// decoded, or is longer than the configured maximum (MaxLine, the pipeline
// key max_line_bytes), is returned as a Message with Err set, naming the
// file and line ("input.jsonl:17: invalid JSON: ..."), wrapping
// connectors.ErrMalformed or connectors.ErrTooLarge, and with the raw line
// (cut at the maximum) in Record.Value, so the host can dead-letter it and
// go on.
//
// # Streams
//
// A source given a Reader (standard input) reads it instead of a file, in
// the same formats. A stream cannot be read again, so the source is not
// resumable: Open(after) does not skip, and the stream's lines take the
// positions after+1, after+2..., so that a restart reading another stream
// skips none of its lines and the ids the host derives from positions do
// not repeat. Lines read but not committed when the host stops are lost
// (at most once). Errors name the stream as "stdin" and count its lines
// from 1. A goroutine reads the stream, so that Read returns when its
// context is done even while the stream has nothing to give.
//
// A WriterSink writes records to a stream (standard output) in the formats
// of the sink below, but a stream cannot be cut back: it is not a
// connectors.Rewindable, and after a crash what a replay writes again
// appears again (at least once).
//
// # Writing
//
// The sink appends one line per record in the chosen format. In "json" it
// writes each value, which must be JSON, on one line (compacted if it
// holds line breaks). In "jsonl" it writes "value" when the value is valid
// UTF-8 and "value_base64" otherwise (the same for the key, and for each
// header's value, under "headers" or "headers_base64"), omits an empty
// key, time 0 and empty headers, and writes header names as text (invalid
// UTF-8 in a header's name is replaced by U+FFFD). What the sink writes,
// the source reads back as the same records (headers ordered by name, one
// of each name). In "lines" it writes the value alone, and refuses a
// value that contains a line break. Write buffers; Flush writes the buffer
// and fsyncs the file.
//
// The sink is a connectors.Rewindable: Offset is the file's length after
// the last Flush, which the host commits with each batch, and Rewind cuts
// the file back to a committed length on restart, so a crash leaves no
// line written twice.
package file
