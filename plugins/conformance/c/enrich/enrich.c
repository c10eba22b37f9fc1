/*
 * enrich: the conformance twin of plugins/enrich in C. A flatmap operator
 * that filters and enriches records whose values are JSON objects:
 *
 *   config:
 *     require: [user, amount]     # drop records lacking any of these fields
 *     min: {amount: 10}           # drop records whose field is under the minimum
 *     set: {source: web, v: 2}    # add these fields, replacing any present
 *
 * A record passes when every required field is present and every field
 * with a minimum (checked in the order of their names) holds a number at
 * least that minimum; an absent field drops the record. A passing record is
 * emitted with the set fields applied: present fields keep their place and
 * take the new value, the others are appended in the configuration's
 * order, and the rest of the object is kept byte for byte. Key, time and
 * headers pass unchanged. A value that is not a JSON object, or a field
 * under min that holds something other than a number, dead-letters the
 * record with the Go plugin's message. The configuration is read with the
 * Go plugin's rules (encoding/json into its struct: unknown fields refused,
 * names matched case-insensitively, duplicates as Go merges them) and
 * refused with its messages.
 *
 * Build (in this directory):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -s \
 *       -I ../../../../sdk/c -o enrich.wasm *.c ../../../../sdk/c/sluice.c
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "sluice.h"

/* ---------------------------------------------------------------------- */
/* Rules. */

typedef struct min_rule {
    sluice_bytes field;
    double min;
} min_rule;

typedef struct set_member {
    sluice_bytes name;  /* decoded */
    sluice_bytes key;   /* JSON text, quotes included */
    sluice_bytes value; /* compacted JSON text */
} set_member;

/* rules is a parsed configuration; its bytes are owned (malloc'd). */
typedef struct rules {
    sluice_bytes *require;
    size_t nrequire;
    min_rule *min; /* sorted by field */
    size_t nmin;
    set_member *set; /* in the configuration's order */
    size_t nset;
} rules;

static rules active;

static void *xalloc(size_t n) {
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) sluice_panic("out of memory");
    return p;
}

static sluice_bytes dup_bytes(sluice_bytes b) {
    uint8_t *p = xalloc(b.len);
    if (b.len > 0) memcpy(p, b.ptr, b.len);
    return sluice_bytes_of(p, b.len);
}

static void free_rules(rules *r) {
    for (size_t i = 0; i < r->nrequire; i++) free(r->require[i].ptr);
    for (size_t i = 0; i < r->nmin; i++) free(r->min[i].field.ptr);
    for (size_t i = 0; i < r->nset; i++) {
        free(r->set[i].name.ptr);
        free(r->set[i].key.ptr);
        free(r->set[i].value.ptr);
    }
    free(r->require);
    free(r->min);
    free(r->set);
    memset(r, 0, sizeof *r);
}

/* compare orders byte strings as Go compares strings. */
static int compare(sluice_bytes a, sluice_bytes b) {
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n > 0 ? memcmp(a.ptr, b.ptr, n) : 0;
    if (c != 0) return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int compare_min(const void *a, const void *b) {
    return compare(((const min_rule *)a)->field, ((const min_rule *)b)->field);
}

/* ---------------------------------------------------------------------- */
/* The configuration, decoded as encoding/json decodes it into
 *
 *   struct {
 *       Require []string           `json:"require"`
 *       Min     map[string]float64 `json:"min"`
 *       Set     json.RawMessage    `json:"set"`
 *   }
 *
 * with DisallowUnknownFields: the value's syntax is checked first, then the
 * fields are decoded in order, and the first type error is the one
 * reported. */

#define RAW_TYPE                                                                                                  \
    "struct { Require []string \"json:\\\"require\\\"\"; Min map[string]float64 \"json:\\\"min\\\"\"; Set "     \
    "json.RawMessage \"json:\\\"set\\\"\" }"

/* decoding is the state of one configuration's decoding. */
typedef struct decoding {
    const uint8_t *c;
    size_t n;
    /* Require: a Go slice, its backing array's slots kept past len */
    sluice_bytes *req;
    size_t req_len, req_cap;
    /* Min: a Go map */
    min_rule *min;
    size_t nmin, min_cap;
    /* Set: the raw value, into c */
    sluice_bytes set;
    bool has_set;
    sluice_buf err; /* the first type error */
    bool failed;
} decoding;

/* what names a value's JSON type as UnmarshalTypeError does. */
static const char *what(uint8_t c) {
    switch (c) {
    case '"': return "string";
    case 't': case 'f': return "bool";
    case '{': return "object";
    case '[': return "array";
    }
    return "number";
}

/* type_error saves "json: cannot unmarshal WHAT into Go struct field .FIELD of type TYPE". */
static void type_error(decoding *d, const char *w, sluice_bytes text, const char *field, const char *type) {
    if (d->failed) return;
    d->failed = true;
    sluice_buf_append_str(&d->err, "json: cannot unmarshal ");
    sluice_buf_append_str(&d->err, w);
    if (text.len > 0) {
        sluice_buf_append_byte(&d->err, ' ');
        sluice_buf_append(&d->err, text.ptr, text.len);
    }
    sluice_buf_append_str(&d->err, " into Go struct field .");
    sluice_buf_append_str(&d->err, field);
    sluice_buf_append_str(&d->err, " of type ");
    sluice_buf_append_str(&d->err, type);
}

static void decode_require(decoding *d, size_t p, size_t end) {
    const uint8_t *c = d->c;
    if (c[p] == 'n') {
        for (size_t i = 0; i < d->req_cap; i++) free(d->req[i].ptr);
        free(d->req);
        d->req = NULL;
        d->req_len = d->req_cap = 0;
        return;
    }
    if (c[p] != '[') {
        type_error(d, what(c[p]), sluice_bytes_of(NULL, 0), "require", "[]string");
        return;
    }
    size_t i = 0;
    p = json_skip_space(c, end, p + 1);
    while (c[p] != ']') {
        if (i >= d->req_cap) {
            sluice_bytes *s = realloc(d->req, (i + 1) * sizeof *s);
            if (s == NULL) sluice_panic("out of memory");
            d->req = s;
            d->req[i] = sluice_bytes_of(NULL, 0);
            d->req_cap = i + 1;
        }
        if (i >= d->req_len) d->req_len = i + 1;
        size_t e = json_skip(c, end, p);
        if (c[p] == '"') {
            sluice_buf s = SLUICE_BUF_INIT;
            json_unquote(c + p, e - p, &s);
            free(d->req[i].ptr);
            d->req[i] = sluice_bytes_of(s.ptr, s.len);
        } else if (c[p] != 'n') {
            type_error(d, what(c[p]), sluice_bytes_of(NULL, 0), "require", "string");
        }
        i++;
        p = json_skip_space(c, end, e);
        if (c[p] == ',') p = json_skip_space(c, end, p + 1);
    }
    if (i < d->req_len) d->req_len = i;
    if (i == 0) {
        for (size_t k = 0; k < d->req_cap; k++) free(d->req[k].ptr);
        free(d->req);
        d->req = NULL;
        d->req_cap = 0;
    }
}

static void min_set(decoding *d, sluice_bytes key, double v) {
    for (size_t i = 0; i < d->nmin; i++) {
        if (sluice_bytes_equal(d->min[i].field, key)) {
            d->min[i].min = v;
            free(key.ptr);
            return;
        }
    }
    if (d->nmin == d->min_cap) {
        d->min_cap = d->min_cap * 2 + 4;
        min_rule *m = realloc(d->min, d->min_cap * sizeof *m);
        if (m == NULL) sluice_panic("out of memory");
        d->min = m;
    }
    d->min[d->nmin].field = key;
    d->min[d->nmin].min = v;
    d->nmin++;
}

static void decode_min(decoding *d, size_t p, size_t end) {
    const uint8_t *c = d->c;
    if (c[p] == 'n') {
        for (size_t i = 0; i < d->nmin; i++) free(d->min[i].field.ptr);
        d->nmin = 0;
        return;
    }
    if (c[p] != '{') {
        type_error(d, what(c[p]), sluice_bytes_of(NULL, 0), "min", "map[string]float64");
        return;
    }
    p = json_skip_space(c, end, p + 1);
    while (c[p] != '}') {
        size_t ke = json_skip(c, end, p);
        sluice_buf key = SLUICE_BUF_INIT;
        json_unquote(c + p, ke - p, &key);
        p = json_skip_space(c, end, json_skip_space(c, end, ke) + 1); /* past the colon */
        size_t ve = json_skip(c, end, p);
        double v = 0;
        if (c[p] == '-' || (c[p] >= '0' && c[p] <= '9')) {
            if (!json_number(c + p, ve - p, &v)) {
                type_error(d, "number", sluice_bytes_of(c + p, ve - p), "min", "float64");
                v = 0;
            }
        } else if (c[p] != 'n') {
            type_error(d, what(c[p]), sluice_bytes_of(NULL, 0), "min", "float64");
        }
        min_set(d, sluice_bytes_of(key.ptr, key.len), v);
        p = json_skip_space(c, end, ve);
        if (c[p] == ',') p = json_skip_space(c, end, p + 1);
    }
}

/* field_is reports whether the decoded name matches want (upper-case
 * ASCII) as encoding/json matches field names: exactly, or folded (ASCII
 * letters without case, U+017F as S, U+212A as K). */
static bool field_is(sluice_bytes name, const char *want) {
    size_t i = 0, j = 0, n = strlen(want);
    while (i < name.len) {
        uint8_t c = name.ptr[i];
        uint8_t f;
        if (c < 0x80) {
            f = (c >= 'a' && c <= 'z') ? (uint8_t)(c - 32) : c;
            i++;
        } else if (name.len - i >= 2 && c == 0xc5 && name.ptr[i + 1] == 0xbf) {
            f = 'S';
            i += 2;
        } else if (name.len - i >= 3 && c == 0xe2 && name.ptr[i + 1] == 0x84 && name.ptr[i + 2] == 0xaa) {
            f = 'K';
            i += 3;
        } else {
            return false;
        }
        if (j >= n || want[j] != f) return false;
        j++;
    }
    return j == n;
}

/* decode_config decodes config into d; false with the message in err. */
static bool decode_config(decoding *d, sluice_buf *err) {
    const uint8_t *c = d->c;
    size_t start, end;
    int r = json_scan_value(c, d->n, 0, &start, &end, err);
    if (r == 2) sluice_buf_append_str(err, "unexpected EOF");
    if (r != 0) return false;
    switch (c[start]) {
    case 'n': return true;
    case '{': break;
    default:
        sluice_buf_append_str(err, "json: cannot unmarshal ");
        sluice_buf_append_str(err, c[start] == '[' ? "array" : what(c[start]));
        sluice_buf_append_str(err, " into Go value of type " RAW_TYPE);
        return false;
    }
    size_t p = json_skip_space(c, end, start + 1);
    sluice_buf name = SLUICE_BUF_INIT;
    while (c[p] != '}') {
        size_t ke = json_skip(c, end, p);
        name.len = 0;
        json_unquote(c + p, ke - p, &name);
        p = json_skip_space(c, end, json_skip_space(c, end, ke) + 1); /* past the colon */
        size_t ve = json_skip(c, end, p);
        sluice_bytes nb = sluice_buf_bytes(&name);
        if (field_is(nb, "REQUIRE")) {
            decode_require(d, p, ve);
        } else if (field_is(nb, "MIN")) {
            decode_min(d, p, ve);
        } else if (field_is(nb, "SET")) {
            d->set = sluice_bytes_of(c + p, ve - p);
            d->has_set = true;
        } else if (!d->failed) {
            d->failed = true;
            sluice_buf_append_str(&d->err, "json: unknown field ");
            sluice_buf_append_quoted(&d->err, name.ptr, name.len);
        }
        p = json_skip_space(c, end, ve);
        if (c[p] == ',') p = json_skip_space(c, end, p + 1);
    }
    sluice_buf_free(&name);
    if (d->failed) {
        sluice_buf_append(err, d->err.ptr, d->err.len);
        return false;
    }
    return true;
}

static void free_decoding(decoding *d) {
    for (size_t i = 0; i < d->req_cap; i++) free(d->req[i].ptr);
    free(d->req);
    for (size_t i = 0; i < d->nmin; i++) free(d->min[i].field.ptr);
    free(d->min);
    sluice_buf_free(&d->err);
}

static sluice_buf msg;

static int config_error(const char *prefix, sluice_bytes detail, const char *suffix) {
    msg.len = 0;
    sluice_buf_append_str(&msg, "enrich configuration: ");
    sluice_buf_append_str(&msg, prefix);
    sluice_buf_append(&msg, detail.ptr, detail.len);
    sluice_buf_append_str(&msg, suffix);
    return sluice_error_bytes(msg.ptr, msg.len);
}

/* find returns the index of the last member of obj called name, or -1. */
static long find_member(const json_member *obj, size_t n, sluice_bytes name) {
    for (size_t i = n; i > 0; i--)
        if (sluice_bytes_equal(obj[i - 1].name, name)) return (long)(i - 1);
    return -1;
}

static long find_set(const set_member *set, size_t n, sluice_bytes name) {
    for (size_t i = n; i > 0; i--)
        if (sluice_bytes_equal(set[i - 1].name, name)) return (long)(i - 1);
    return -1;
}

static json_object obj;

static int configure(const uint8_t *config, size_t len) {
    decoding d = {config, len, NULL, 0, 0, NULL, 0, 0, {NULL, 0}, false, SLUICE_BUF_INIT, false};
    sluice_buf err = SLUICE_BUF_INIT;
    rules r = {NULL, 0, NULL, 0, NULL, 0};
    int rc = SLUICE_OK;
    if (!decode_config(&d, &err)) {
        rc = config_error("", sluice_buf_bytes(&err),
                          " (want {\"require\": [names], \"min\": {name: number}, \"set\": {name: value}})");
        goto done;
    }
    r.nrequire = d.req_len;
    r.require = xalloc(d.req_len * sizeof *r.require);
    for (size_t i = 0; i < d.req_len; i++) {
        if (d.req[i].len == 0) {
            r.nrequire = i;
            rc = config_error("\"require\" holds an empty field name", sluice_bytes_of(NULL, 0), "");
            goto done;
        }
        r.require[i] = dup_bytes(d.req[i]);
    }
    r.nmin = d.nmin;
    r.min = xalloc(d.nmin * sizeof *r.min);
    for (size_t i = 0; i < d.nmin; i++) r.min[i] = (min_rule){dup_bytes(d.min[i].field), d.min[i].min};
    qsort(r.min, r.nmin, sizeof *r.min, compare_min);
    if (d.has_set && d.set.len > 0 && !sluice_bytes_equal(d.set, SLUICE_LIT("null"))) {
        err.len = 0;
        if (!json_read_object(d.set.ptr, d.set.len, &obj, &err)) {
            rc = config_error("\"set\": ", sluice_buf_bytes(&err), "");
            goto done;
        }
        r.set = xalloc(obj.len * sizeof *r.set);
        for (size_t i = 0; i < obj.len; i++) {
            json_member *m = &obj.members[i];
            if (find_member(obj.members, i, m->name) >= 0) {
                msg.len = 0;
                sluice_buf_append_str(&msg, "enrich configuration: \"set\" names field ");
                sluice_buf_append_quoted(&msg, m->name.ptr, m->name.len);
                sluice_buf_append_str(&msg, " twice");
                rc = sluice_error_bytes(msg.ptr, msg.len);
                goto done;
            }
            sluice_buf v = SLUICE_BUF_INIT;
            json_compact(m->value.ptr, m->value.len, &v);
            r.set[i] = (set_member){dup_bytes(m->name), dup_bytes(m->key), dup_bytes(sluice_buf_bytes(&v))};
            r.nset = i + 1;
            sluice_buf_free(&v);
        }
    }
    free_rules(&active);
    active = r;
    r = (rules){NULL, 0, NULL, 0, NULL, 0};
done:
    free_rules(&r);
    free_decoding(&d);
    sluice_buf_free(&err);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Records. */

static sluice_buf out, err;

static int handle(const sluice_record *rec) {
    const rules *r = &active;
    err.len = 0;
    if (!json_read_object(rec->value.ptr, rec->value.len, &obj, &err)) {
        msg.len = 0;
        sluice_buf_append_str(&msg, "value is not a JSON object: ");
        sluice_buf_append(&msg, err.ptr, err.len);
        return sluice_error_bytes(msg.ptr, msg.len);
    }
    const json_member *m = obj.members;
    for (size_t i = 0; i < r->nrequire; i++)
        if (find_member(m, obj.len, r->require[i]) < 0) return SLUICE_OK; /* dropped */
    for (size_t i = 0; i < r->nmin; i++) {
        long k = find_member(m, obj.len, r->min[i].field);
        if (k < 0) return SLUICE_OK;
        sluice_bytes v = m[k].value;
        if (v.len == 0 || (v.ptr[0] != '-' && (v.ptr[0] < '0' || v.ptr[0] > '9'))) {
            msg.len = 0;
            sluice_buf_append_str(&msg, "field ");
            sluice_buf_append_quoted(&msg, r->min[i].field.ptr, r->min[i].field.len);
            sluice_buf_append_str(&msg, " is ");
            sluice_buf_append_str(&msg, json_kind(v.ptr, v.len));
            sluice_buf_append_str(&msg, ", not a number");
            return sluice_error_bytes(msg.ptr, msg.len);
        }
        double f;
        json_number(v.ptr, v.len, &f); /* out of range: ±Inf, as ParseFloat's value */
        if (f < r->min[i].min) return SLUICE_OK;
    }
    out.len = 0;
    sluice_buf_append_byte(&out, '{');
    for (size_t i = 0; i < obj.len; i++) {
        if (i > 0) sluice_buf_append_byte(&out, ',');
        sluice_buf_append(&out, m[i].key.ptr, m[i].key.len);
        sluice_buf_append_byte(&out, ':');
        long s = find_set(r->set, r->nset, m[i].name);
        sluice_bytes v = s >= 0 ? r->set[s].value : m[i].value;
        sluice_buf_append(&out, v.ptr, v.len);
    }
    size_t n = obj.len;
    for (size_t i = 0; i < r->nset; i++) {
        if (find_member(m, obj.len, r->set[i].name) >= 0) continue;
        if (n > 0) sluice_buf_append_byte(&out, ',');
        n++;
        sluice_buf_append(&out, r->set[i].key.ptr, r->set[i].key.len);
        sluice_buf_append_byte(&out, ':');
        sluice_buf_append(&out, r->set[i].value.ptr, r->set[i].value.len);
    }
    sluice_buf_append_byte(&out, '}');
    sluice_record o = *rec;
    o.value = sluice_buf_bytes(&out);
    sluice_emit(&o);
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.configure = configure, .flatmap = handle};
