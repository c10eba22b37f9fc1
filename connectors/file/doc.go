// Package file reads and writes records as lines of a file: a finite
// Source for replaying recorded input and feeding examples and tests, and a
// Sink for capturing output.
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
//     headers of the same name keeps the last.
//   - "id" (string): ignored by the source; written by a sink configured
//     with WriteIDs, so that a consumer of the file can drop replays.
//
// Any other member, a value of the wrong type, or text that is not one JSON
// object makes the line malformed. Blank lines are skipped.
//
// Format "lines" makes each line the value of one record, with no key, no
// headers and time 0. The line ending ("\n" or "\r\n") is not part of the
// value; an empty line is a record with an empty value.
//
// # Positions and errors
//
// A record's position is its line number, counting from 1, so the source
// resumes exactly: Open(after) skips lines 1 to after. A line that cannot be
// decoded, or is longer than the configured maximum, is returned as a
// Message with Err set, naming the file and line ("input.jsonl:17: invalid
// JSON: ..."), wrapping connectors.ErrMalformed or connectors.ErrTooLarge,
// and with the raw line (cut at the maximum) in Record.Value, so the host
// can dead-letter it and go on.
//
// # Writing
//
// The sink appends one line per record in the format of SinkConfig.Format.
// In "jsonl" it writes "value" when the value is valid UTF-8 and
// "value_base64" otherwise (the same for the key), omits an empty key, time
// 0 and empty headers, and writes header names and values as text (invalid
// UTF-8 in a header is replaced by U+FFFD). What the sink writes, the source
// reads back as the same records. In "lines" it writes the value alone, and
// refuses a value that contains a line break. Write buffers; Flush writes
// the buffer and fsyncs the file.
//
// A pipeline file's file sink (and its dead-letter file) writes "jsonl":
// `format` is a key of file sources only, and "lines" is for programs
// that use this package.
//
// The sink is a connectors.Rewindable: Offset is the file's length after
// the last Flush, which the host commits with each batch, and Rewind cuts
// the file back to a committed length on restart, so a crash leaves no
// line written twice.
package file
