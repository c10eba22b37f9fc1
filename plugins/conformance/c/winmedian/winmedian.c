/*
 * winmedian: the C twin of plugins/winmedian, a window function (ABI.md
 * section 13): the median of a window's values, each a decimal integer
 * (an optional '-', then digits, within int64), in decimal: the middle
 * value once sorted, the upper of the two middle values for an even
 * count. A value that is not an integer dead-letters the whole window.
 */
#include <stdlib.h>

#include "sluice.h"

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

static int cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int median(sluice_bytes key, const sluice_window *w, const sluice_record *recs, size_t n) {
    (void)w;
    if (n == 0) return SLUICE_OK;
    int64_t *vs = malloc(n * sizeof *vs);
    if (vs == NULL) sluice_panic("out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!parse(recs[i].value, &vs[i])) {
            free(vs);
            return sluice_errorf("record %zu: value is not a decimal integer", i);
        }
    }
    qsort(vs, n, sizeof *vs, cmp);
    sluice_buf v = SLUICE_BUF_INIT;
    sluice_buf_append_i64(&v, vs[n / 2]);
    free(vs);
    sluice_record out = {0};
    out.key = key;
    out.value = sluice_buf_bytes(&v);
    sluice_emit(&out);
    sluice_buf_free(&v);
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.window_fire = median};
