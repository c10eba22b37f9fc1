/*
 * upper: the conformance twin of plugins/upper in C. A map operator that
 * upper-cases the ASCII letters a-z of each record's value in place; every
 * other byte (UTF-8 sequences included), the key, the time and the headers
 * pass unchanged. The record keeps its fields, so the SDK forwards its
 * encoding without encoding it again.
 *
 * Build (in this directory):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -s \
 *       -I ../../../../sdk/c -o upper.wasm *.c ../../../../sdk/c/sluice.c
 */
#include <string.h>

#include "sluice.h"

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/*
 * upper8 upper-cases the letters among the eight bytes of w at once. With
 * each byte's high bit cleared, adding 0x80-'a' sets a byte's high bit
 * exactly when it is at least 'a', and adding 0x80-'z'-1 exactly when it
 * is above 'z'; no add carries into the next byte. Their difference marks
 * the letters, less the bytes that were not ASCII, and the mark moved to
 * bit 5 is the case bit to clear.
 */
static inline uint64_t upper8(uint64_t w) {
    uint64_t low = w & ~HIGHS;
    uint64_t from_a = low + (0x80 - 'a') * ONES;
    uint64_t past_z = low + (0x80 - 'z' - 1) * ONES;
    uint64_t letters = from_a & ~past_z & ~w & HIGHS;
    return w ^ (letters >> 2);
}

static int upper(sluice_record *r) {
    uint8_t *p = r->value.ptr;
    size_t n = r->value.len;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w = upper8(w);
        memcpy(p, &w, 8);
    }
    for (; n > 0; p++, n--)
        if (*p >= 'a' && *p <= 'z') *p -= 'a' - 'A';
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.map = upper};
