/*
 * example: a complete Sluice operator in C, the first half of a word count.
 *
 * A flatmap operator: for each input record (a line of text), it emits one
 * record per word, lower-cased ASCII, with the word as key and value and
 * the line's time, so that a keyed operator after it (the word count of
 * plugins/conformance/c/wordcount) counts words. A word is a run of ASCII
 * letters and digits; other bytes separate words.
 *
 * Its optional configuration is {"min_length": N}: words shorter than N
 * are dropped (default 1). A record whose value is not valid UTF-8 is
 * dead-lettered with a message saying where, to show how a callback
 * reports bad input.
 *
 * Build (in this directory; see ../README.md):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -s \
 *       -I .. -o example.wasm *.c ../sluice.c
 */
#include <string.h>

#include "sluice.h"

/* The configuration, read once per instance by configure. */
static size_t min_length = 1;

/* word is the lower-cased word being emitted, reused from word to word:
 * sluice_emit encodes the record at once. */
static sluice_buf word;

static bool is_word_byte(uint8_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/*
 * configure reads {"min_length": N} (or null, or {}). The pipeline's
 * config arrives as JSON, not NUL-terminated; this reader is deliberately
 * small: a real operator with a richer configuration would use a JSON
 * reader (plugins/conformance/c/enrich/json.c is one).
 */
static int configure(const uint8_t *config, size_t len) {
    static const char key[] = "{\"min_length\":";
    const size_t klen = sizeof key - 1;
    if ((len == 4 && memcmp(config, "null", 4) == 0) || (len == 2 && memcmp(config, "{}", 2) == 0)) return SLUICE_OK;
    if (len < klen + 2 || memcmp(config, key, klen) != 0 || config[len - 1] != '}')
        return sluice_error("want {\"min_length\": N}");
    size_t n = 0, i = klen;
    while (i < len && config[i] == ' ') i++;
    for (; i < len - 1 && config[i] >= '0' && config[i] <= '9' && n <= 1000; i++) n = n * 10 + (config[i] - '0');
    if (i != len - 1 || n == 0 || n > 1000) return sluice_error("min_length: want a whole number from 1 to 1000");
    min_length = n;
    sluice_logf(SLUICE_LOG_INFO, "dropping words shorter than %zu bytes", min_length);
    return SLUICE_OK;
}

static int split(const sluice_record *r) {
    const uint8_t *v = r->value.ptr;
    size_t n = r->value.len;
    for (size_t i = 0; i < n;) {
        size_t w;
        if (v[i] >= 0x80 && sluice_utf8_decode(v + i, n - i, &w) == 0xfffd && w == 1)
            return sluice_errorf("value is not UTF-8 at byte %zu", i);
        if (!is_word_byte(v[i])) {
            i++;
            continue;
        }
        word.len = 0;
        for (; i < n && is_word_byte(v[i]); i++) {
            uint8_t c = v[i];
            sluice_buf_append_byte(&word, c >= 'A' && c <= 'Z' ? (uint8_t)(c + 'a' - 'A') : c);
        }
        if (word.len < min_length) continue;
        sluice_record out = {sluice_buf_bytes(&word), sluice_buf_bytes(&word), r->time, NULL, 0};
        sluice_emit(&out);
    }
    return SLUICE_OK;
}

SLUICE_OPERATOR = {.flatmap = split, .configure = configure};
