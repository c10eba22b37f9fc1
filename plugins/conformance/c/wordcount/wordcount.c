/*
 * wordcount: the conformance twin of plugins/wordcount in C. A keyed
 * operator that counts records per key: the count lives in the default
 * table as decimal ASCII, and after each update the operator emits the key
 * with the new count as value, at the input's time, without headers. A
 * stored count that is not a decimal number (one or more ASCII digits, at
 * most 2^64-1) dead-letters the record with the Go plugin's message and
 * leaves the count as it is.
 *
 * Build (in this directory):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -s \
 *       -I ../../../../sdk/c -o wordcount.wasm *.c ../../../../sdk/c/sluice.c
 */
#include "sluice.h"

/* Buffers reused from record to record: the stored value, the new count
 * and error messages. sluice_state_put copies, sluice_emit encodes. */
static sluice_buf stored, count, msg;

/* count_error dead-letters the record whose stored count is bad. */
static int count_error(const sluice_record *r, const char *before, bool quote_value, const char *after) {
    msg.len = 0;
    sluice_buf_append_str(&msg, "stored count of key ");
    sluice_buf_append_quoted(&msg, r->key.ptr, r->key.len);
    sluice_buf_append_str(&msg, ": ");
    sluice_buf_append_str(&msg, before);
    if (quote_value) sluice_buf_append_quoted(&msg, stored.ptr, stored.len);
    sluice_buf_append_str(&msg, after);
    return sluice_error_bytes(msg.ptr, msg.len);
}

static int handle(const sluice_record *r) {
    uint64_t n = 0;
    if (sluice_state_get(0, r->key, &stored)) {
        if (stored.len == 0) return count_error(r, "empty, want a decimal number", false, "");
        for (size_t i = 0; i < stored.len; i++) {
            uint64_t d = (uint64_t)stored.ptr[i] - '0';
            if (d > 9) return count_error(r, "", true, " is not a decimal number");
            if (n > (UINT64_MAX - d) / 10) return count_error(r, "", true, " is out of range");
            n = n * 10 + d;
        }
    }
    count.len = 0;
    sluice_buf_append_u64(&count, n + 1);
    sluice_state_put(0, r->key, sluice_buf_bytes(&count));
    sluice_record out = {r->key, sluice_buf_bytes(&count), r->time, NULL, 0};
    sluice_emit(&out);
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.keyed = handle};
