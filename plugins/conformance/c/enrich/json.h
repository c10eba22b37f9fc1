/*
 * json.h: the small JSON reader of the enrich operator. It accepts and
 * refuses exactly what the Go plugin's encoding/json calls do (a
 * json.Decoder's Token, More and Decode into a json.RawMessage, Go 1.26),
 * and words its errors as they do, so that the C operator dead-letters the
 * same records with the same messages. It keeps the text of names and
 * values as they are in the input, and decodes names as Go does (escapes,
 * surrogate pairs, invalid UTF-8 as U+FFFD).
 */
#ifndef ENRICH_JSON_H
#define ENRICH_JSON_H

#include "sluice.h"

/*
 * json_member is one name/value pair of an object: name is the decoded
 * name; key the name's JSON text, quotes included; value the value's JSON
 * text, without surrounding white space. key and value point into the
 * input, name into the object's arena.
 */
typedef struct json_member {
    sluice_bytes name;
    sluice_bytes key;
    sluice_bytes value;
} json_member;

/* json_object holds an object's members, reused from object to object. */
typedef struct json_object {
    json_member *members;
    size_t len, cap;
    sluice_buf names; /* the decoded names, back to back */
} json_object;

/*
 * json_read_object splits data, which must hold exactly one JSON object
 * (white space around it is allowed), into its members in order, as the
 * Go plugin's readObject does. It returns true, or false after appending
 * the reason to err.
 */
bool json_read_object(const uint8_t *data, size_t n, json_object *obj, sluice_buf *err);

/*
 * json_scan_value reads the JSON value that starts at data[pos] (after
 * white space) as a json.Decoder reads a whole value: it returns 0 and
 * sets [*start, *end) to the value's text, or 1 after appending a syntax
 * error to err, or 2 when the input ends inside the value (Go's
 * io.ErrUnexpectedEOF, or io.EOF when nothing but space was left).
 */
int json_scan_value(const uint8_t *data, size_t n, size_t pos, size_t *start, size_t *end, sluice_buf *err);

/* json_unquote appends the decoded content of the JSON string s (quotes
 * included, valid) to dst, as encoding/json decodes strings. */
void json_unquote(const uint8_t *s, size_t n, sluice_buf *dst);

/* json_compact appends the valid JSON text s without insignificant white
 * space, as json.Compact does. */
void json_compact(const uint8_t *s, size_t n, sluice_buf *dst);

/* json_skip returns the end of the valid JSON value starting at s[p]. */
size_t json_skip(const uint8_t *s, size_t n, size_t p);

/* json_skip_space returns the first offset from p that is not JSON white space. */
size_t json_skip_space(const uint8_t *s, size_t n, size_t p);

/* json_kind names the JSON type of a value's text, as the Go plugin's kind. */
const char *json_kind(const uint8_t *v, size_t n);

/*
 * json_number parses the JSON number text s as strconv.ParseFloat does
 * (correctly rounded) into *f, and returns false when it is out of
 * float64's range (*f is then ±Inf, as ParseFloat returns with ErrRange).
 */
bool json_number(const uint8_t *s, size_t n, double *f);

#endif /* ENRICH_JSON_H */
