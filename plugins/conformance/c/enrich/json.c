/*
 * json.c: see json.h. The scanner is a byte-at-a-time state machine with
 * the states, the nesting limit (10,000) and the error texts of Go's
 * encoding/json scanner, because which byte an error is reported at, and
 * in which words, is what the Go plugin's messages are made of. The object
 * reader then follows json.Decoder's token states over it.
 */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* The scanner. */

enum {
    MAX_DEPTH = 10000
};

typedef enum state {
    S_BEGIN_VALUE,
    S_BEGIN_VALUE_OR_EMPTY,
    S_BEGIN_STRING_OR_EMPTY,
    S_BEGIN_STRING,
    S_END_VALUE,
    S_END_TOP,
    S_STRING,
    S_STRING_ESC,
    S_STRING_HEX, /* hex digits left in hex_left */
    S_NEG,
    S_INT,  /* after a digit 1-9 (and more digits) */
    S_ZERO, /* after a leading 0, or an integer */
    S_DOT,
    S_FRAC,
    S_EXP,
    S_EXP_SIGN,
    S_EXP_DIGITS,
    S_LITERAL, /* true, false, null: lit_next is the next byte expected */
    S_ERROR
} state;

typedef enum result {
    R_CONTINUE,
    R_POP,   /* an object or array ended with this byte */
    R_END,   /* the top-level value ended before this byte */
    R_ERROR
} result;

typedef struct scanner {
    state st;
    uint32_t depth;
    bool top_key; /* the innermost object is before its colon */
    int hex_left;
    const char *lit_name; /* "true", "false" or "null" */
    const char *lit_next;
    uint8_t err_c;
    const char *err_ctx;
    uint8_t objects[MAX_DEPTH / 8 + 1]; /* bit d-1: level d is an object */
} scanner;

/* One scanner for the module: an instance runs one call at a time, and the
 * bit stack is too large for the guest's stack to hold comfortably. */
static scanner sc;

static bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static bool is_hex(uint8_t c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

static result fail(scanner *s, uint8_t c, const char *ctx) {
    s->st = S_ERROR;
    s->err_c = c;
    s->err_ctx = ctx;
    return R_ERROR;
}

static bool top_is_object(const scanner *s) { return (s->objects[(s->depth - 1) / 8] >> ((s->depth - 1) % 8)) & 1; }

static result push(scanner *s, uint8_t c, bool object) {
    s->depth++;
    if (s->depth > MAX_DEPTH) return fail(s, c, "exceeded max depth");
    uint32_t i = s->depth - 1;
    if (object) s->objects[i / 8] |= (uint8_t)(1u << (i % 8));
    else s->objects[i / 8] &= (uint8_t)~(1u << (i % 8));
    s->top_key = object;
    s->st = object ? S_BEGIN_STRING_OR_EMPTY : S_BEGIN_VALUE_OR_EMPTY;
    return R_CONTINUE;
}

static result pop(scanner *s) {
    s->depth--;
    s->st = s->depth == 0 ? S_END_TOP : S_END_VALUE;
    s->top_key = false;
    return R_POP;
}

static result end_value(scanner *s, uint8_t c) {
    if (s->depth == 0) {
        /* The top-level value ended before c; whatever c is, it is not
         * part of it (Go records an error for a non-space c but reports
         * the end first, and a Decoder never asks for that error). */
        s->st = S_END_TOP;
        return R_END;
    }
    if (is_space(c)) {
        s->st = S_END_VALUE;
        return R_CONTINUE;
    }
    if (top_is_object(s)) {
        if (s->top_key) {
            if (c == ':') {
                s->top_key = false;
                s->st = S_BEGIN_VALUE;
                return R_CONTINUE;
            }
            return fail(s, c, "after object key");
        }
        if (c == ',') {
            s->top_key = true;
            s->st = S_BEGIN_STRING;
            return R_CONTINUE;
        }
        if (c == '}') return pop(s);
        return fail(s, c, "after object key:value pair");
    }
    if (c == ',') {
        s->st = S_BEGIN_VALUE;
        return R_CONTINUE;
    }
    if (c == ']') return pop(s);
    return fail(s, c, "after array element");
}

static result begin_value(scanner *s, uint8_t c) {
    if (is_space(c)) return R_CONTINUE;
    switch (c) {
    case '{': return push(s, c, true);
    case '[': return push(s, c, false);
    case '"': s->st = S_STRING; return R_CONTINUE;
    case '-': s->st = S_NEG; return R_CONTINUE;
    case '0': s->st = S_ZERO; return R_CONTINUE;
    case 't': s->lit_name = "true"; break;
    case 'f': s->lit_name = "false"; break;
    case 'n': s->lit_name = "null"; break;
    default:
        if (c >= '1' && c <= '9') {
            s->st = S_INT;
            return R_CONTINUE;
        }
        return fail(s, c, "looking for beginning of value");
    }
    s->lit_next = s->lit_name + 1;
    s->st = S_LITERAL;
    return R_CONTINUE;
}

static result begin_string(scanner *s, uint8_t c) {
    if (is_space(c)) return R_CONTINUE;
    if (c == '"') {
        s->st = S_STRING;
        return R_CONTINUE;
    }
    return fail(s, c, "looking for beginning of object key string");
}

/* The literals' error contexts, by the byte expected next. */
static const char *literal_context(const char *name, char expected) {
    static const char *const ctx[] = {
        "in literal true (expecting 'r')",  "in literal true (expecting 'u')",  "in literal true (expecting 'e')",
        "in literal false (expecting 'a')", "in literal false (expecting 'l')", "in literal false (expecting 's')",
        "in literal false (expecting 'e')", "in literal null (expecting 'u')",  "in literal null (expecting 'l')",
    };
    if (name[0] == 't') return ctx[expected == 'r' ? 0 : expected == 'u' ? 1 : 2];
    if (name[0] == 'f') return ctx[expected == 'a' ? 3 : expected == 'l' ? 4 : expected == 's' ? 5 : 6];
    return ctx[expected == 'u' ? 7 : 8];
}

static result step(scanner *s, uint8_t c) {
    switch (s->st) {
    case S_BEGIN_VALUE: return begin_value(s, c);
    case S_BEGIN_VALUE_OR_EMPTY:
        if (is_space(c)) return R_CONTINUE;
        if (c == ']') return end_value(s, c);
        return begin_value(s, c);
    case S_BEGIN_STRING_OR_EMPTY:
        if (is_space(c)) return R_CONTINUE;
        if (c == '}') {
            s->top_key = false;
            return end_value(s, c);
        }
        return begin_string(s, c);
    case S_BEGIN_STRING: return begin_string(s, c);
    case S_END_VALUE: return end_value(s, c);
    case S_END_TOP: return R_END;
    case S_STRING:
        if (c == '"') {
            s->st = S_END_VALUE;
            return R_CONTINUE;
        }
        if (c == '\\') {
            s->st = S_STRING_ESC;
            return R_CONTINUE;
        }
        if (c < 0x20) return fail(s, c, "in string literal");
        return R_CONTINUE;
    case S_STRING_ESC:
        switch (c) {
        case 'b': case 'f': case 'n': case 'r': case 't': case '\\': case '/': case '"':
            s->st = S_STRING;
            return R_CONTINUE;
        case 'u':
            s->st = S_STRING_HEX;
            s->hex_left = 4;
            return R_CONTINUE;
        }
        return fail(s, c, "in string escape code");
    case S_STRING_HEX:
        if (!is_hex(c)) return fail(s, c, "in \\u hexadecimal character escape");
        if (--s->hex_left == 0) s->st = S_STRING;
        return R_CONTINUE;
    case S_NEG:
        if (c == '0') {
            s->st = S_ZERO;
            return R_CONTINUE;
        }
        if (c >= '1' && c <= '9') {
            s->st = S_INT;
            return R_CONTINUE;
        }
        return fail(s, c, "in numeric literal");
    case S_INT:
        if (is_digit(c)) return R_CONTINUE;
        /* fall through: as after a 0 */
    case S_ZERO:
        if (c == '.') {
            s->st = S_DOT;
            return R_CONTINUE;
        }
        if (c == 'e' || c == 'E') {
            s->st = S_EXP;
            return R_CONTINUE;
        }
        return end_value(s, c);
    case S_DOT:
        if (is_digit(c)) {
            s->st = S_FRAC;
            return R_CONTINUE;
        }
        return fail(s, c, "after decimal point in numeric literal");
    case S_FRAC:
        if (is_digit(c)) return R_CONTINUE;
        if (c == 'e' || c == 'E') {
            s->st = S_EXP;
            return R_CONTINUE;
        }
        return end_value(s, c);
    case S_EXP:
        if (c == '+' || c == '-') {
            s->st = S_EXP_SIGN;
            return R_CONTINUE;
        }
        /* fall through: a digit must follow */
    case S_EXP_SIGN:
        if (is_digit(c)) {
            s->st = S_EXP_DIGITS;
            return R_CONTINUE;
        }
        return fail(s, c, "in exponent of numeric literal");
    case S_EXP_DIGITS:
        if (is_digit(c)) return R_CONTINUE;
        return end_value(s, c);
    case S_LITERAL:
        if (c != (uint8_t)*s->lit_next) return fail(s, c, literal_context(s->lit_name, *s->lit_next));
        if (*++s->lit_next == 0) s->st = S_END_VALUE;
        return R_CONTINUE;
    case S_ERROR: return R_ERROR;
    }
    return R_ERROR;
}

/* append_char appends c as Go's quoteChar: the rune U+00XX, Go-quoted in
 * single quotes ('\'' and '"' as themselves). */
static void append_char(sluice_buf *b, uint8_t c) {
    if (c == '\'') {
        sluice_buf_append_str(b, "'\\''");
        return;
    }
    if (c == '"') {
        sluice_buf_append_str(b, "'\"'");
        return;
    }
    uint8_t utf8[2];
    size_t n = 1;
    if (c < 0x80) {
        utf8[0] = c;
    } else {
        utf8[0] = (uint8_t)(0xc0 | c >> 6);
        utf8[1] = (uint8_t)(0x80 | (c & 0x3f));
        n = 2;
    }
    size_t at = b->len;
    sluice_buf_append_quoted(b, utf8, n);
    b->ptr[at] = '\'';
    b->ptr[b->len - 1] = '\'';
}

static void syntax_error(sluice_buf *err, uint8_t c, const char *ctx) {
    sluice_buf_append_str(err, "invalid character ");
    append_char(err, c);
    if (ctx[0] != 0) {
        sluice_buf_append_byte(err, ' ');
        sluice_buf_append_str(err, ctx);
    }
}

size_t json_skip_space(const uint8_t *s, size_t n, size_t p) {
    while (p < n && is_space(s[p])) p++;
    return p;
}

int json_scan_value(const uint8_t *data, size_t n, size_t pos, size_t *start, size_t *end, sluice_buf *err) {
    scanner *s = &sc;
    s->st = S_BEGIN_VALUE;
    s->depth = 0;
    s->top_key = false;
    *start = json_skip_space(data, n, pos);
    for (size_t i = pos; i < n; i++) {
        result r = step(s, data[i]);
        if (r == R_END) {
            *end = i;
            return 0;
        }
        if (r == R_POP && s->depth == 0) {
            *end = i + 1;
            return 0;
        }
        if (r == R_ERROR) {
            syntax_error(err, s->err_c, s->err_ctx);
            return 1;
        }
    }
    if (step(s, ' ') == R_END) {
        *end = n;
        return 0;
    }
    return 2;
}

/* ---------------------------------------------------------------------- */
/* Strings, numbers, compaction. */

static void append_rune(sluice_buf *b, uint32_t r) {
    uint8_t *d = sluice_buf_reserve(b, 4);
    size_t n;
    if (r < 0x80) {
        d[0] = (uint8_t)r;
        n = 1;
    } else if (r < 0x800) {
        d[0] = (uint8_t)(0xc0 | r >> 6);
        d[1] = (uint8_t)(0x80 | (r & 0x3f));
        n = 2;
    } else if (r < 0x10000) {
        d[0] = (uint8_t)(0xe0 | r >> 12);
        d[1] = (uint8_t)(0x80 | ((r >> 6) & 0x3f));
        d[2] = (uint8_t)(0x80 | (r & 0x3f));
        n = 3;
    } else {
        d[0] = (uint8_t)(0xf0 | r >> 18);
        d[1] = (uint8_t)(0x80 | ((r >> 12) & 0x3f));
        d[2] = (uint8_t)(0x80 | ((r >> 6) & 0x3f));
        d[3] = (uint8_t)(0x80 | (r & 0x3f));
        n = 4;
    }
    b->len += n;
}

static int hex_value(uint8_t c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* u4 reads "\uXXXX" at s (n bytes left), or returns -1. */
static int32_t u4(const uint8_t *s, size_t n) {
    if (n < 6 || s[0] != '\\' || s[1] != 'u') return -1;
    int32_t r = 0;
    for (int i = 2; i < 6; i++) {
        int h = hex_value(s[i]);
        if (h < 0) return -1;
        r = r << 4 | h;
    }
    return r;
}

void json_unquote(const uint8_t *s, size_t n, sluice_buf *dst) {
    s++, n -= 2; /* the quotes */
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == '\\') {
            uint8_t e = s[i + 1];
            i += 2;
            switch (e) {
            case 'b': sluice_buf_append_byte(dst, '\b'); continue;
            case 'f': sluice_buf_append_byte(dst, '\f'); continue;
            case 'n': sluice_buf_append_byte(dst, '\n'); continue;
            case 'r': sluice_buf_append_byte(dst, '\r'); continue;
            case 't': sluice_buf_append_byte(dst, '\t'); continue;
            case 'u': break;
            default: sluice_buf_append_byte(dst, e); continue; /* " \ / */
            }
            uint32_t r = (uint32_t)u4(s + i - 2, n - i + 2);
            i += 4;
            if (r >= 0xd800 && r < 0xe000) {
                int32_t r2 = u4(s + i, n - i);
                if (r < 0xdc00 && r2 >= 0xdc00 && r2 < 0xe000) {
                    append_rune(dst, 0x10000 + ((r - 0xd800) << 10 | ((uint32_t)r2 - 0xdc00)));
                    i += 6;
                    continue;
                }
                r = 0xfffd;
            }
            append_rune(dst, r);
            continue;
        }
        if (c < 0x80) {
            sluice_buf_append_byte(dst, c);
            i++;
            continue;
        }
        size_t w;
        uint32_t r = sluice_utf8_decode(s + i, n - i, &w);
        if (r == 0xfffd && w == 1) append_rune(dst, 0xfffd);
        else sluice_buf_append(dst, s + i, w);
        i += w;
    }
}

void json_compact(const uint8_t *s, size_t n, sluice_buf *dst) {
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (in_string) {
            sluice_buf_append_byte(dst, c);
            if (c == '\\') sluice_buf_append_byte(dst, s[++i]);
            else if (c == '"') in_string = false;
            continue;
        }
        if (is_space(c)) continue;
        if (c == '"') in_string = true;
        sluice_buf_append_byte(dst, c);
    }
}

static size_t skip_string(const uint8_t *s, size_t n, size_t p) {
    for (p++; p < n && s[p] != '"'; p++)
        if (s[p] == '\\') p++;
    return p + 1;
}

size_t json_skip(const uint8_t *s, size_t n, size_t p) {
    if (s[p] == '"') return skip_string(s, n, p);
    if (s[p] == '{' || s[p] == '[') {
        size_t depth = 0;
        while (p < n) {
            uint8_t c = s[p];
            if (c == '"') {
                p = skip_string(s, n, p);
                continue;
            }
            p++;
            if (c == '{' || c == '[') depth++;
            else if ((c == '}' || c == ']') && --depth == 0) return p;
        }
        return p;
    }
    while (p < n && (is_digit(s[p]) || (s[p] >= 'a' && s[p] <= 'z') || s[p] == 'E' || s[p] == '+' || s[p] == '-' ||
                     s[p] == '.'))
        p++;
    return p;
}

const char *json_kind(const uint8_t *v, size_t n) {
    if (n == 0) return "empty";
    switch (v[0]) {
    case '"': return "a string";
    case '{': return "an object";
    case '[': return "an array";
    case 't': case 'f': return "a boolean";
    case 'n': return "null";
    }
    return "not a number";
}

bool json_number(const uint8_t *s, size_t n, double *f) {
    static sluice_buf text;
    text.len = 0;
    sluice_buf_append(&text, s, n);
    sluice_buf_append_byte(&text, 0);
    /* musl's strtod, in wasi-libc, rounds correctly, as ParseFloat does;
     * an overflow gives ±HUGE_VAL, ±Inf, as ParseFloat's ErrRange does,
     * and an underflow 0 or a subnormal, as ParseFloat without error. */
    *f = strtod((const char *)text.ptr, NULL);
    return !isinf(*f);
}

/* ---------------------------------------------------------------------- */
/* The object reader: json.Decoder's Token, More and Decode, as the Go
 * plugin's readObject calls them. */

typedef enum tstate { T_TOP, T_OBJECT_START, T_OBJECT_KEY, T_OBJECT_COLON, T_OBJECT_VALUE, T_OBJECT_COMMA } tstate;

static void token_error(sluice_buf *err, uint8_t c, tstate st) {
    static const char *const ctx[] = {
        [T_TOP] = "looking for beginning of value",
        [T_OBJECT_START] = "",
        [T_OBJECT_KEY] = "looking for beginning of object key string",
        [T_OBJECT_COLON] = "after object key",
        [T_OBJECT_VALUE] = "looking for beginning of value",
        [T_OBJECT_COMMA] = "after object key:value pair",
    };
    syntax_error(err, c, ctx[st]);
}

/* peek skips white space and reads the next byte, or returns false at the end. */
static bool peek(const uint8_t *d, size_t n, size_t *pos, uint8_t *c) {
    *pos = json_skip_space(d, n, *pos);
    if (*pos == n) return false;
    *c = d[*pos];
    return true;
}

static void unexpected_end(sluice_buf *err) { sluice_buf_append_str(err, "unexpected end of JSON"); }

/* scan_error appends the error of json_scan_value's result r. */
static bool scan_error(int r, sluice_buf *err) {
    if (r == 2) unexpected_end(err);
    return false;
}

/* top_value reports what a value that is not an object is, as the Go
 * plugin does after Token decoded it as a whole value. */
static bool top_value(const uint8_t *d, size_t n, size_t pos, sluice_buf *err) {
    size_t start, end;
    int r = json_scan_value(d, n, pos, &start, &end, err);
    if (r != 0) return scan_error(r, err);
    double f;
    if ((d[start] == '-' || is_digit(d[start])) && !json_number(d + start, end - start, &f)) {
        sluice_buf_append_str(err, "json: cannot unmarshal number ");
        sluice_buf_append(err, d + start, end - start);
        sluice_buf_append_str(err, " into Go value of type float64");
        return false;
    }
    sluice_buf_append_str(err, "it is ");
    size_t t = json_skip_space(d, n, 0);
    sluice_buf_append_str(err, json_kind(d + t, n - t));
    return false;
}

bool json_read_object(const uint8_t *d, size_t n, json_object *obj, sluice_buf *err) {
    obj->len = 0;
    obj->names.len = 0;
    size_t pos = 0;
    uint8_t c;
    if (!peek(d, n, &pos, &c)) {
        unexpected_end(err);
        return false;
    }
    switch (c) {
    case '{': break;
    case '[':
        sluice_buf_append_str(err, "it is an array");
        return false;
    case ']': case '}': case ':': case ',':
        token_error(err, c, T_TOP);
        return false;
    default: return top_value(d, n, pos, err);
    }
    pos++;
    tstate st = T_OBJECT_START;
    for (;;) {
        /* More */
        if (!peek(d, n, &pos, &c) || c == ']' || c == '}') break;
        size_t start = pos;
        /* Token: the member's name */
        for (;;) {
            if (!peek(d, n, &pos, &c)) {
                unexpected_end(err);
                return false;
            }
            if (c == ',' && st == T_OBJECT_COMMA) {
                pos++;
                st = T_OBJECT_KEY;
                continue;
            }
            if (c == '"' && (st == T_OBJECT_START || st == T_OBJECT_KEY)) break;
            token_error(err, c, st);
            return false;
        }
        size_t vs, ve;
        int r = json_scan_value(d, n, pos, &vs, &ve, err);
        if (r != 0) return scan_error(r, err);
        size_t name_at = obj->names.len;
        json_unquote(d + vs, ve - vs, &obj->names);
        pos = ve;
        while (d[start] != '"') start++;
        if (obj->len == obj->cap) {
            size_t cap = obj->cap * 2 + 8;
            json_member *m = realloc(obj->members, cap * sizeof *m);
            if (m == NULL) sluice_panic("out of memory");
            obj->members = m;
            obj->cap = cap;
        }
        json_member *m = &obj->members[obj->len++];
        m->key = sluice_bytes_of(d + start, pos - start);
        /* The name lies in the arena after the previous one; its pointer
         * is set at the end, as the arena may move while it grows. */
        m->name = sluice_bytes_of(NULL, obj->names.len - name_at);
        /* Decode the value: a colon first */
        if (!peek(d, n, &pos, &c)) {
            unexpected_end(err);
            return false;
        }
        if (c != ':') {
            sluice_buf_append_str(err, "expected colon after object key");
            return false;
        }
        pos++;
        r = json_scan_value(d, n, pos, &vs, &ve, err);
        if (r != 0) return scan_error(r, err);
        m->value = sluice_bytes_of(d + vs, ve - vs);
        pos = ve;
        st = T_OBJECT_COMMA;
    }
    /* Token: the closing brace */
    if (!peek(d, n, &pos, &c)) {
        unexpected_end(err);
        return false;
    }
    if (c != '}') {
        token_error(err, c, st);
        return false;
    }
    pos++;
    /* Token: nothing may follow */
    if (peek(d, n, &pos, &c)) {
        sluice_buf_append_str(err, "data after the object");
        return false;
    }
    size_t at = 0;
    for (size_t i = 0; i < obj->len; i++) {
        obj->members[i].name.ptr = obj->names.ptr != NULL ? obj->names.ptr + at : NULL;
        at += obj->members[i].name.len;
    }
    return true;
}
