/*
 * wincount: the C twin of plugins/wincount, an aggregate (ABI.md section
 * 13): per key and window, the number of records and the sum of their
 * values, each a decimal integer (an optional '-', then digits, within
 * int64); a record whose value is not one is rejected. The accumulator is
 * 16 bytes, count and sum as little-endian 64-bit integers (the sum wraps
 * around); a window's result is "count,sum" in decimal.
 */
#include <string.h>

#include "sluice.h"

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* parse reads a decimal int64 as Go's strconv.ParseInt(s, 10, 64) does,
 * but for a leading '+', which it refuses. */
static bool parse(sluice_bytes s, int64_t *out) {
    size_t i = 0;
    bool neg = s.len > 0 && s.ptr[0] == '-';
    if (neg) i = 1;
    if (i == s.len) return false;
    uint64_t m = 0;
    for (; i < s.len; i++) {
        unsigned d = (unsigned)s.ptr[i] - '0';
        if (d > 9) return false;
        if (m > 922337203685477580u || (m == 922337203685477580u && d > 7u + neg)) return false;
        m = m * 10 + d;
    }
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return true;
}

static int add(sluice_buf *acc, const sluice_record *r) {
    int64_t v;
    if (!parse(r->value, &v)) return sluice_error("value is not a decimal integer");
    if (acc->len != 16) {
        acc->len = 0;
        memset(sluice_buf_reserve(acc, 16), 0, 16);
        acc->len = 16;
    }
    put64(acc->ptr, get64(acc->ptr) + 1);
    put64(acc->ptr + 8, get64(acc->ptr + 8) + (uint64_t)v);
    return SLUICE_OK;
}

static int merge(sluice_buf *a, sluice_bytes b) {
    if (a->len != 16 || b.len != 16) return sluice_error("accumulator is not 16 bytes");
    put64(a->ptr, get64(a->ptr) + get64(b.ptr));
    put64(a->ptr + 8, get64(a->ptr + 8) + get64(b.ptr + 8));
    return SLUICE_OK;
}

static int fire(sluice_bytes key, const sluice_window *w, sluice_bytes acc) {
    (void)w;
    if (acc.len != 16) return sluice_error("accumulator is not 16 bytes");
    static sluice_buf v = SLUICE_BUF_INIT;
    v.len = 0;
    sluice_buf_append_u64(&v, get64(acc.ptr));
    sluice_buf_append_byte(&v, ',');
    sluice_buf_append_i64(&v, (int64_t)get64(acc.ptr + 8));
    sluice_record out = {0};
    out.key = key;
    out.value = sluice_buf_bytes(&v);
    sluice_emit(&out);
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.agg_add = add, .agg_merge = merge, .agg_fire = fire};
