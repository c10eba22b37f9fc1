/*
 * joiner: the C twin of plugins/joiner, a join function (ABI.md section
 * 14): for each pair the host's join matched, one record with the pair's
 * key and the value "L|R", L the left record's value and R the right
 * one's ("-" for a side an outer join left empty), and, for a window join,
 * a header "window" holding the window's start and end as two 8-byte
 * little-endian integers. A left value "twice" emits the result twice, a
 * left value "none" emits nothing, and a value "bad" on either side
 * dead-letters the pair with the error "bad value in pair".
 */
#include "sluice.h"

/* put64 stores v at p, little-endian. */
static void put64(uint8_t *p, int64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)((uint64_t)v >> (8 * i));
}

static int join(sluice_bytes key, const sluice_window *w, const sluice_record *left, const sluice_record *right) {
    sluice_bytes l = left != NULL ? left->value : SLUICE_LIT("-");
    sluice_bytes r = right != NULL ? right->value : SLUICE_LIT("-");
    if (sluice_bytes_equal(l, SLUICE_LIT("bad")) || sluice_bytes_equal(r, SLUICE_LIT("bad")))
        return sluice_error("bad value in pair");
    if (left != NULL && sluice_bytes_equal(l, SLUICE_LIT("none"))) return SLUICE_OK;
    sluice_buf v = SLUICE_BUF_INIT;
    sluice_buf_append(&v, l.ptr, l.len);
    sluice_buf_append_byte(&v, '|');
    sluice_buf_append(&v, r.ptr, r.len);
    sluice_record out = {0};
    out.key = key;
    out.value = sluice_buf_bytes(&v);
    uint8_t bounds[16];
    sluice_header h = {SLUICE_LIT("window"), sluice_bytes_of(bounds, sizeof bounds)};
    if (w != NULL) {
        put64(bounds, w->start);
        put64(bounds + 8, w->end);
        out.headers = &h;
        out.header_count = 1;
    }
    sluice_emit(&out);
    if (left != NULL && sluice_bytes_equal(l, SLUICE_LIT("twice"))) sluice_emit(&out);
    sluice_buf_free(&v);
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.join = join};
