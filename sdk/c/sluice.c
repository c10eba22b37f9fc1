/*
 * sluice.c: the guest core of the C SDK (see sluice.h and README.md).
 *
 * It owns the memory handed to the host, decodes input batches, runs the
 * operator's callbacks over them, encodes their outputs and speaks the
 * transactional encodings of ABI.md section 10. Design decisions:
 *
 * - One static guest state (g below): a WebAssembly instance is one
 *   operator instance with its own memory, so static storage is exactly
 *   per-instance state, and the exports take no context argument.
 * - The operator is a const struct the user defines (SLUICE_OPERATOR), not
 *   a registration call: a module without one fails to link, and the
 *   struct is checked once, at the first call, with a message naming what
 *   is wrong. Its record callback gives its kind.
 * - The input region from sluice_alloc is one malloc'd block, reused and
 *   grown with headroom; a second request before the region is consumed
 *   gets an extra block. Blocks live until the next sluice_alloc that
 *   starts a new call's allocations, which keeps the apply region valid
 *   while the host writes request after request into it (ABI.md 2.2).
 * - Map and filter records that come out as they went in are forwarded:
 *   runs of them join the output with one copy, and a batch forwarded
 *   whole is handed back to the host where it lies, as the Go SDK does.
 * - Outputs gather in one buffer, flushed with one emit per batch or per
 *   MiB, always between records, so that a failing record's outputs can be
 *   discarded; declarations reach txn_plan the same way.
 * - Decoders check every length against what is left before reading and
 *   refuse what abi.Decoder, abi.DecodeApplyRequest and
 *   abi.OutcomeDecoder refuse; integers are assembled byte by byte (and
 *   stored with memcpy on little-endian machines), so the code is
 *   endian-neutral and clang emits single unaligned loads and stores.
 * - No printf unless an operator calls a *f function: messages are built
 *   in a sluice_buf, which keeps small modules small.
 */
#include "sluice.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__wasm__)
#define SLUICE_EXPORT(name) __attribute__((export_name(name)))
#else
#define SLUICE_EXPORT(name)
#endif

/* Limits and buffer sizes, as the Go SDK's. */
enum {
    FLUSH_SIZE = 1 << 20,   /* outputs or declarations handed over past this size */
    INITIAL_OUT = 64 << 10, /* starting capacity of the output buffer */
    MAX_KEPT_OUT = 8 << 20, /* output capacity kept from batch to batch */
    MAX_ALLOC = 1 << 30,    /* largest sluice_alloc request served */
    RECORD_FIXED = 28,      /* a record's bytes after its size field, without key, value, headers */
    RECORD_MIN = 4 + RECORD_FIXED,
};

/* The code of a failing effect, returned as StatusError by sluice_apply. */
#define EFFECT_FAIL SLUICE_STATUS_ERROR

/* ---------------------------------------------------------------------- */
/* Little-endian integers. */

static inline uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

static inline void st32(uint8_t *p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 4); /* one unaligned store: clang does not merge the byte stores */
#else
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
#endif
}

static inline void st64(uint8_t *p, uint64_t v) {
    st32(p, (uint32_t)v);
    st32(p + 4, (uint32_t)(v >> 32));
}

/*
 * copy copies n bytes between buffers that do not overlap. Keys, values
 * and names are mostly short: eight bytes at a time in line, rather than a
 * call to wasi-libc's memcpy, which copies bytewise or by shifting words
 * when source and destination are not aligned alike (this build has no
 * bulk-memory memory.copy).
 */
static inline void copy(uint8_t *dst, const uint8_t *src, size_t n) {
    if (n > 64) {
        memcpy(dst, src, n);
        return;
    }
    for (; n >= 8; dst += 8, src += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, src, 8);
        memcpy(dst, &w, 8);
    }
    for (; n > 0; n--) *dst++ = *src++;
}

/* ---------------------------------------------------------------------- */
/* The guest state. */

enum kind {
    KIND_UNCHECKED,
    KIND_INVALID,
    KIND_MAP,
    KIND_FILTER,
    KIND_FLATMAP,
    KIND_KEYED,
    KIND_TXN,
    KIND_AGG,
    KIND_WINDOW,
    KIND_JOIN
};

/* What the guest is doing, for the functions valid only in some callbacks. */
enum phase {
    PHASE_IDLE,
    PHASE_CONFIGURE,
    PHASE_RECORD,   /* a map or filter callback */
    PHASE_EMITTING, /* a flatmap, keyed or post callback: sluice_emit is valid */
    PHASE_PLAN,
    PHASE_APPLY
};

struct sluice_planner {
    bool active;
    uint32_t event;
    size_t nfn;
    bool misuse; /* an operation named a function out of range */
    uint32_t bad_fn;
    sluice_buf buf; /* encoded declarations not yet handed to txn_plan */
};

/*
 * guest is the module's one guest core. Invariants: out holds a batch
 * header and out_count records after it whenever a call is running;
 * outputs are flushed only between records. During a forwarding run, the
 * outputs of input records run_first up to the one in progress are those
 * records' own encodings, which start at batch offset run_start.
 */
static struct guest {
    const sluice_operator *op;
    enum kind kind;
    sluice_buf kind_err; /* why the operator definition is unusable */

    /* Input regions (see sluice_alloc). */
    uint8_t *in;
    size_t in_cap;
    bool pending;
    uint8_t **extra;
    size_t extra_len, extra_cap;

    enum phase phase;
    uint32_t origin; /* the input being handled, for emit and reject */

    sluice_buf out;
    uint32_t out_count;
    size_t run_start;
    uint32_t run_first;

    sluice_record rec;
    /* Window and join functions: the accumulator, and a window's (or a
     * join pair's) records with their headers. */
    sluice_buf acc;
    sluice_record *members;
    size_t members_cap;
    sluice_header *mhdrs;
    size_t mhdrs_cap;
    sluice_header *hdrs;
    size_t hdrs_cap;

    sluice_buf err; /* the message of the current callback's error */
    bool err_set;
    sluice_buf msg; /* messages for the host's log */

    /* Transactional operators. */
    sluice_planner planner;
    sluice_call call;
    sluice_kv *reads;
    size_t reads_cap;
    bool refused; /* the host refused an access of the current operation */
    sluice_buf refusal;
    sluice_buf scratch;
    sluice_op_outcome *ops;
    size_t ops_cap;
    sluice_value *vals;
    size_t vals_cap;
    sluice_kv *gets;
    size_t gets_cap;
#if !defined(__wasm__)
    const uint8_t *written;
    size_t written_len;
#endif
} g;

/* ---------------------------------------------------------------------- */
/* Panics, byte strings and buffers. */

void sluice_panic(const char *msg) {
    static const char prefix[] = "sluice: panic: ";
    ssize_t ignored = write(2, prefix, sizeof prefix - 1);
    ignored = write(2, msg, strlen(msg));
    ignored = write(2, "\n", 1);
    (void)ignored;
    __builtin_trap();
}

sluice_bytes sluice_cstr(const char *s) { return sluice_bytes_of(s, s != NULL ? strlen(s) : 0); }

bool sluice_bytes_equal(sluice_bytes a, sluice_bytes b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

const sluice_bytes *sluice_record_header(const sluice_record *r, const char *name) {
    sluice_bytes n = sluice_cstr(name);
    for (size_t i = 0; i < r->header_count; i++)
        if (sluice_bytes_equal(r->headers[i].name, n)) return &r->headers[i].value;
    return NULL;
}

/*
 * grow returns a block of at least n elements of size sz (never NULL),
 * reallocating p, whose capacity *cap it updates. A failure traps.
 */
static void *grow(void *p, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap && p != NULL) return p;
    size_t c = *cap * 2;
    if (c < n) c = n;
    if (c < 8) c = 8;
    if (c > SIZE_MAX / sz) sluice_panic("out of memory");
    void *q = realloc(p, c * sz);
    if (q == NULL) sluice_panic("out of memory");
    *cap = c;
    return q;
}

uint8_t *sluice_buf_reserve(sluice_buf *b, size_t n) {
    if (n > SIZE_MAX - b->len) sluice_panic("out of memory");
    if (b->cap - b->len < n || b->ptr == NULL) b->ptr = grow(b->ptr, &b->cap, b->len + n, 1);
    return b->ptr + b->len;
}

void sluice_buf_append(sluice_buf *b, const void *p, size_t n) {
    uint8_t *d = sluice_buf_reserve(b, n);
    copy(d, p, n);
    b->len += n;
}

void sluice_buf_append_str(sluice_buf *b, const char *s) { sluice_buf_append(b, s, strlen(s)); }

void sluice_buf_append_byte(sluice_buf *b, uint8_t c) {
    *sluice_buf_reserve(b, 1) = c;
    b->len++;
}

void sluice_buf_append_u64(sluice_buf *b, uint64_t v) {
    uint8_t d[20];
    size_t i = sizeof d;
    do {
        d[--i] = (uint8_t)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    sluice_buf_append(b, d + i, sizeof d - i);
}

void sluice_buf_append_i64(sluice_buf *b, int64_t v) {
    if (v < 0) {
        sluice_buf_append_byte(b, '-');
        sluice_buf_append_u64(b, (uint64_t)0 - (uint64_t)v);
        return;
    }
    sluice_buf_append_u64(b, (uint64_t)v);
}

void sluice_buf_free(sluice_buf *b) {
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

/* ---------------------------------------------------------------------- */
/* Go's strconv.Quote. */

/*
 * Printable runes above U+007F, as Go 1.26's strconv.IsPrint (Unicode 15)
 * has them: per plane, sorted inclusive ranges of the rune's low 16 bits.
 * Generated by `go run sdk/c/tools/printtable.go sdk/c/sluice.c`.
 */
/* BEGIN GENERATED PRINT TABLE */
/* From strconv.IsPrint of go1.26.8 (Unicode 15.0.0). */
static const uint16_t print_plane0[] = {
    0x00a1, 0x00ac, 0x00ae, 0x0377, 0x037a, 0x037f, 0x0384, 0x038a, 0x038c, 0x038c, 0x038e, 0x03a1,
    0x03a3, 0x052f, 0x0531, 0x0556, 0x0559, 0x058a, 0x058d, 0x058f, 0x0591, 0x05c7, 0x05d0, 0x05ea,
    0x05ef, 0x05f4, 0x0606, 0x061b, 0x061d, 0x06dc, 0x06de, 0x070d, 0x0710, 0x074a, 0x074d, 0x07b1,
    0x07c0, 0x07fa, 0x07fd, 0x082d, 0x0830, 0x083e, 0x0840, 0x085b, 0x085e, 0x085e, 0x0860, 0x086a,
    0x0870, 0x088e, 0x0898, 0x08e1, 0x08e3, 0x0983, 0x0985, 0x098c, 0x098f, 0x0990, 0x0993, 0x09a8,
    0x09aa, 0x09b0, 0x09b2, 0x09b2, 0x09b6, 0x09b9, 0x09bc, 0x09c4, 0x09c7, 0x09c8, 0x09cb, 0x09ce,
    0x09d7, 0x09d7, 0x09dc, 0x09dd, 0x09df, 0x09e3, 0x09e6, 0x09fe, 0x0a01, 0x0a03, 0x0a05, 0x0a0a,
    0x0a0f, 0x0a10, 0x0a13, 0x0a28, 0x0a2a, 0x0a30, 0x0a32, 0x0a33, 0x0a35, 0x0a36, 0x0a38, 0x0a39,
    0x0a3c, 0x0a3c, 0x0a3e, 0x0a42, 0x0a47, 0x0a48, 0x0a4b, 0x0a4d, 0x0a51, 0x0a51, 0x0a59, 0x0a5c,
    0x0a5e, 0x0a5e, 0x0a66, 0x0a76, 0x0a81, 0x0a83, 0x0a85, 0x0a8d, 0x0a8f, 0x0a91, 0x0a93, 0x0aa8,
    0x0aaa, 0x0ab0, 0x0ab2, 0x0ab3, 0x0ab5, 0x0ab9, 0x0abc, 0x0ac5, 0x0ac7, 0x0ac9, 0x0acb, 0x0acd,
    0x0ad0, 0x0ad0, 0x0ae0, 0x0ae3, 0x0ae6, 0x0af1, 0x0af9, 0x0aff, 0x0b01, 0x0b03, 0x0b05, 0x0b0c,
    0x0b0f, 0x0b10, 0x0b13, 0x0b28, 0x0b2a, 0x0b30, 0x0b32, 0x0b33, 0x0b35, 0x0b39, 0x0b3c, 0x0b44,
    0x0b47, 0x0b48, 0x0b4b, 0x0b4d, 0x0b55, 0x0b57, 0x0b5c, 0x0b5d, 0x0b5f, 0x0b63, 0x0b66, 0x0b77,
    0x0b82, 0x0b83, 0x0b85, 0x0b8a, 0x0b8e, 0x0b90, 0x0b92, 0x0b95, 0x0b99, 0x0b9a, 0x0b9c, 0x0b9c,
    0x0b9e, 0x0b9f, 0x0ba3, 0x0ba4, 0x0ba8, 0x0baa, 0x0bae, 0x0bb9, 0x0bbe, 0x0bc2, 0x0bc6, 0x0bc8,
    0x0bca, 0x0bcd, 0x0bd0, 0x0bd0, 0x0bd7, 0x0bd7, 0x0be6, 0x0bfa, 0x0c00, 0x0c0c, 0x0c0e, 0x0c10,
    0x0c12, 0x0c28, 0x0c2a, 0x0c39, 0x0c3c, 0x0c44, 0x0c46, 0x0c48, 0x0c4a, 0x0c4d, 0x0c55, 0x0c56,
    0x0c58, 0x0c5a, 0x0c5d, 0x0c5d, 0x0c60, 0x0c63, 0x0c66, 0x0c6f, 0x0c77, 0x0c8c, 0x0c8e, 0x0c90,
    0x0c92, 0x0ca8, 0x0caa, 0x0cb3, 0x0cb5, 0x0cb9, 0x0cbc, 0x0cc4, 0x0cc6, 0x0cc8, 0x0cca, 0x0ccd,
    0x0cd5, 0x0cd6, 0x0cdd, 0x0cde, 0x0ce0, 0x0ce3, 0x0ce6, 0x0cef, 0x0cf1, 0x0cf3, 0x0d00, 0x0d0c,
    0x0d0e, 0x0d10, 0x0d12, 0x0d44, 0x0d46, 0x0d48, 0x0d4a, 0x0d4f, 0x0d54, 0x0d63, 0x0d66, 0x0d7f,
    0x0d81, 0x0d83, 0x0d85, 0x0d96, 0x0d9a, 0x0db1, 0x0db3, 0x0dbb, 0x0dbd, 0x0dbd, 0x0dc0, 0x0dc6,
    0x0dca, 0x0dca, 0x0dcf, 0x0dd4, 0x0dd6, 0x0dd6, 0x0dd8, 0x0ddf, 0x0de6, 0x0def, 0x0df2, 0x0df4,
    0x0e01, 0x0e3a, 0x0e3f, 0x0e5b, 0x0e81, 0x0e82, 0x0e84, 0x0e84, 0x0e86, 0x0e8a, 0x0e8c, 0x0ea3,
    0x0ea5, 0x0ea5, 0x0ea7, 0x0ebd, 0x0ec0, 0x0ec4, 0x0ec6, 0x0ec6, 0x0ec8, 0x0ece, 0x0ed0, 0x0ed9,
    0x0edc, 0x0edf, 0x0f00, 0x0f47, 0x0f49, 0x0f6c, 0x0f71, 0x0f97, 0x0f99, 0x0fbc, 0x0fbe, 0x0fcc,
    0x0fce, 0x0fda, 0x1000, 0x10c5, 0x10c7, 0x10c7, 0x10cd, 0x10cd, 0x10d0, 0x1248, 0x124a, 0x124d,
    0x1250, 0x1256, 0x1258, 0x1258, 0x125a, 0x125d, 0x1260, 0x1288, 0x128a, 0x128d, 0x1290, 0x12b0,
    0x12b2, 0x12b5, 0x12b8, 0x12be, 0x12c0, 0x12c0, 0x12c2, 0x12c5, 0x12c8, 0x12d6, 0x12d8, 0x1310,
    0x1312, 0x1315, 0x1318, 0x135a, 0x135d, 0x137c, 0x1380, 0x1399, 0x13a0, 0x13f5, 0x13f8, 0x13fd,
    0x1400, 0x167f, 0x1681, 0x169c, 0x16a0, 0x16f8, 0x1700, 0x1715, 0x171f, 0x1736, 0x1740, 0x1753,
    0x1760, 0x176c, 0x176e, 0x1770, 0x1772, 0x1773, 0x1780, 0x17dd, 0x17e0, 0x17e9, 0x17f0, 0x17f9,
    0x1800, 0x180d, 0x180f, 0x1819, 0x1820, 0x1878, 0x1880, 0x18aa, 0x18b0, 0x18f5, 0x1900, 0x191e,
    0x1920, 0x192b, 0x1930, 0x193b, 0x1940, 0x1940, 0x1944, 0x196d, 0x1970, 0x1974, 0x1980, 0x19ab,
    0x19b0, 0x19c9, 0x19d0, 0x19da, 0x19de, 0x1a1b, 0x1a1e, 0x1a5e, 0x1a60, 0x1a7c, 0x1a7f, 0x1a89,
    0x1a90, 0x1a99, 0x1aa0, 0x1aad, 0x1ab0, 0x1ace, 0x1b00, 0x1b4c, 0x1b50, 0x1b7e, 0x1b80, 0x1bf3,
    0x1bfc, 0x1c37, 0x1c3b, 0x1c49, 0x1c4d, 0x1c88, 0x1c90, 0x1cba, 0x1cbd, 0x1cc7, 0x1cd0, 0x1cfa,
    0x1d00, 0x1f15, 0x1f18, 0x1f1d, 0x1f20, 0x1f45, 0x1f48, 0x1f4d, 0x1f50, 0x1f57, 0x1f59, 0x1f59,
    0x1f5b, 0x1f5b, 0x1f5d, 0x1f5d, 0x1f5f, 0x1f7d, 0x1f80, 0x1fb4, 0x1fb6, 0x1fc4, 0x1fc6, 0x1fd3,
    0x1fd6, 0x1fdb, 0x1fdd, 0x1fef, 0x1ff2, 0x1ff4, 0x1ff6, 0x1ffe, 0x2010, 0x2027, 0x2030, 0x205e,
    0x2070, 0x2071, 0x2074, 0x208e, 0x2090, 0x209c, 0x20a0, 0x20c0, 0x20d0, 0x20f0, 0x2100, 0x218b,
    0x2190, 0x2426, 0x2440, 0x244a, 0x2460, 0x2b73, 0x2b76, 0x2b95, 0x2b97, 0x2cf3, 0x2cf9, 0x2d25,
    0x2d27, 0x2d27, 0x2d2d, 0x2d2d, 0x2d30, 0x2d67, 0x2d6f, 0x2d70, 0x2d7f, 0x2d96, 0x2da0, 0x2da6,
    0x2da8, 0x2dae, 0x2db0, 0x2db6, 0x2db8, 0x2dbe, 0x2dc0, 0x2dc6, 0x2dc8, 0x2dce, 0x2dd0, 0x2dd6,
    0x2dd8, 0x2dde, 0x2de0, 0x2e5d, 0x2e80, 0x2e99, 0x2e9b, 0x2ef3, 0x2f00, 0x2fd5, 0x2ff0, 0x2ffb,
    0x3001, 0x303f, 0x3041, 0x3096, 0x3099, 0x30ff, 0x3105, 0x312f, 0x3131, 0x318e, 0x3190, 0x31e3,
    0x31f0, 0x321e, 0x3220, 0xa48c, 0xa490, 0xa4c6, 0xa4d0, 0xa62b, 0xa640, 0xa6f7, 0xa700, 0xa7ca,
    0xa7d0, 0xa7d1, 0xa7d3, 0xa7d3, 0xa7d5, 0xa7d9, 0xa7f2, 0xa82c, 0xa830, 0xa839, 0xa840, 0xa877,
    0xa880, 0xa8c5, 0xa8ce, 0xa8d9, 0xa8e0, 0xa953, 0xa95f, 0xa97c, 0xa980, 0xa9cd, 0xa9cf, 0xa9d9,
    0xa9de, 0xa9fe, 0xaa00, 0xaa36, 0xaa40, 0xaa4d, 0xaa50, 0xaa59, 0xaa5c, 0xaac2, 0xaadb, 0xaaf6,
    0xab01, 0xab06, 0xab09, 0xab0e, 0xab11, 0xab16, 0xab20, 0xab26, 0xab28, 0xab2e, 0xab30, 0xab6b,
    0xab70, 0xabed, 0xabf0, 0xabf9, 0xac00, 0xd7a3, 0xd7b0, 0xd7c6, 0xd7cb, 0xd7fb, 0xf900, 0xfa6d,
    0xfa70, 0xfad9, 0xfb00, 0xfb06, 0xfb13, 0xfb17, 0xfb1d, 0xfb36, 0xfb38, 0xfb3c, 0xfb3e, 0xfb3e,
    0xfb40, 0xfb41, 0xfb43, 0xfb44, 0xfb46, 0xfbc2, 0xfbd3, 0xfd8f, 0xfd92, 0xfdc7, 0xfdcf, 0xfdcf,
    0xfdf0, 0xfe19, 0xfe20, 0xfe52, 0xfe54, 0xfe66, 0xfe68, 0xfe6b, 0xfe70, 0xfe74, 0xfe76, 0xfefc,
    0xff01, 0xffbe, 0xffc2, 0xffc7, 0xffca, 0xffcf, 0xffd2, 0xffd7, 0xffda, 0xffdc, 0xffe0, 0xffe6,
    0xffe8, 0xffee, 0xfffc, 0xfffd,
};
static const uint16_t print_plane1[] = {
    0x0000, 0x000b, 0x000d, 0x0026, 0x0028, 0x003a, 0x003c, 0x003d, 0x003f, 0x004d, 0x0050, 0x005d,
    0x0080, 0x00fa, 0x0100, 0x0102, 0x0107, 0x0133, 0x0137, 0x018e, 0x0190, 0x019c, 0x01a0, 0x01a0,
    0x01d0, 0x01fd, 0x0280, 0x029c, 0x02a0, 0x02d0, 0x02e0, 0x02fb, 0x0300, 0x0323, 0x032d, 0x034a,
    0x0350, 0x037a, 0x0380, 0x039d, 0x039f, 0x03c3, 0x03c8, 0x03d5, 0x0400, 0x049d, 0x04a0, 0x04a9,
    0x04b0, 0x04d3, 0x04d8, 0x04fb, 0x0500, 0x0527, 0x0530, 0x0563, 0x056f, 0x057a, 0x057c, 0x058a,
    0x058c, 0x0592, 0x0594, 0x0595, 0x0597, 0x05a1, 0x05a3, 0x05b1, 0x05b3, 0x05b9, 0x05bb, 0x05bc,
    0x0600, 0x0736, 0x0740, 0x0755, 0x0760, 0x0767, 0x0780, 0x0785, 0x0787, 0x07b0, 0x07b2, 0x07ba,
    0x0800, 0x0805, 0x0808, 0x0808, 0x080a, 0x0835, 0x0837, 0x0838, 0x083c, 0x083c, 0x083f, 0x0855,
    0x0857, 0x089e, 0x08a7, 0x08af, 0x08e0, 0x08f2, 0x08f4, 0x08f5, 0x08fb, 0x091b, 0x091f, 0x0939,
    0x093f, 0x093f, 0x0980, 0x09b7, 0x09bc, 0x09cf, 0x09d2, 0x0a03, 0x0a05, 0x0a06, 0x0a0c, 0x0a13,
    0x0a15, 0x0a17, 0x0a19, 0x0a35, 0x0a38, 0x0a3a, 0x0a3f, 0x0a48, 0x0a50, 0x0a58, 0x0a60, 0x0a9f,
    0x0ac0, 0x0ae6, 0x0aeb, 0x0af6, 0x0b00, 0x0b35, 0x0b39, 0x0b55, 0x0b58, 0x0b72, 0x0b78, 0x0b91,
    0x0b99, 0x0b9c, 0x0ba9, 0x0baf, 0x0c00, 0x0c48, 0x0c80, 0x0cb2, 0x0cc0, 0x0cf2, 0x0cfa, 0x0d27,
    0x0d30, 0x0d39, 0x0e60, 0x0e7e, 0x0e80, 0x0ea9, 0x0eab, 0x0ead, 0x0eb0, 0x0eb1, 0x0efd, 0x0f27,
    0x0f30, 0x0f59, 0x0f70, 0x0f89, 0x0fb0, 0x0fcb, 0x0fe0, 0x0ff6, 0x1000, 0x104d, 0x1052, 0x1075,
    0x107f, 0x10bc, 0x10be, 0x10c2, 0x10d0, 0x10e8, 0x10f0, 0x10f9, 0x1100, 0x1134, 0x1136, 0x1147,
    0x1150, 0x1176, 0x1180, 0x11df, 0x11e1, 0x11f4, 0x1200, 0x1211, 0x1213, 0x1241, 0x1280, 0x1286,
    0x1288, 0x1288, 0x128a, 0x128d, 0x128f, 0x129d, 0x129f, 0x12a9, 0x12b0, 0x12ea, 0x12f0, 0x12f9,
    0x1300, 0x1303, 0x1305, 0x130c, 0x130f, 0x1310, 0x1313, 0x1328, 0x132a, 0x1330, 0x1332, 0x1333,
    0x1335, 0x1339, 0x133b, 0x1344, 0x1347, 0x1348, 0x134b, 0x134d, 0x1350, 0x1350, 0x1357, 0x1357,
    0x135d, 0x1363, 0x1366, 0x136c, 0x1370, 0x1374, 0x1400, 0x145b, 0x145d, 0x1461, 0x1480, 0x14c7,
    0x14d0, 0x14d9, 0x1580, 0x15b5, 0x15b8, 0x15dd, 0x1600, 0x1644, 0x1650, 0x1659, 0x1660, 0x166c,
    0x1680, 0x16b9, 0x16c0, 0x16c9, 0x1700, 0x171a, 0x171d, 0x172b, 0x1730, 0x1746, 0x1800, 0x183b,
    0x18a0, 0x18f2, 0x18ff, 0x1906, 0x1909, 0x1909, 0x190c, 0x1913, 0x1915, 0x1916, 0x1918, 0x1935,
    0x1937, 0x1938, 0x193b, 0x1946, 0x1950, 0x1959, 0x19a0, 0x19a7, 0x19aa, 0x19d7, 0x19da, 0x19e4,
    0x1a00, 0x1a47, 0x1a50, 0x1aa2, 0x1ab0, 0x1af8, 0x1b00, 0x1b09, 0x1c00, 0x1c08, 0x1c0a, 0x1c36,
    0x1c38, 0x1c45, 0x1c50, 0x1c6c, 0x1c70, 0x1c8f, 0x1c92, 0x1ca7, 0x1ca9, 0x1cb6, 0x1d00, 0x1d06,
    0x1d08, 0x1d09, 0x1d0b, 0x1d36, 0x1d3a, 0x1d3a, 0x1d3c, 0x1d3d, 0x1d3f, 0x1d47, 0x1d50, 0x1d59,
    0x1d60, 0x1d65, 0x1d67, 0x1d68, 0x1d6a, 0x1d8e, 0x1d90, 0x1d91, 0x1d93, 0x1d98, 0x1da0, 0x1da9,
    0x1ee0, 0x1ef8, 0x1f00, 0x1f10, 0x1f12, 0x1f3a, 0x1f3e, 0x1f59, 0x1fb0, 0x1fb0, 0x1fc0, 0x1ff1,
    0x1fff, 0x2399, 0x2400, 0x246e, 0x2470, 0x2474, 0x2480, 0x2543, 0x2f90, 0x2ff2, 0x3000, 0x342f,
    0x3440, 0x3455, 0x4400, 0x4646, 0x6800, 0x6a38, 0x6a40, 0x6a5e, 0x6a60, 0x6a69, 0x6a6e, 0x6abe,
    0x6ac0, 0x6ac9, 0x6ad0, 0x6aed, 0x6af0, 0x6af5, 0x6b00, 0x6b45, 0x6b50, 0x6b59, 0x6b5b, 0x6b61,
    0x6b63, 0x6b77, 0x6b7d, 0x6b8f, 0x6e40, 0x6e9a, 0x6f00, 0x6f4a, 0x6f4f, 0x6f87, 0x6f8f, 0x6f9f,
    0x6fe0, 0x6fe4, 0x6ff0, 0x6ff1, 0x7000, 0x87f7, 0x8800, 0x8cd5, 0x8d00, 0x8d08, 0xaff0, 0xaff3,
    0xaff5, 0xaffb, 0xaffd, 0xaffe, 0xb000, 0xb122, 0xb132, 0xb132, 0xb150, 0xb152, 0xb155, 0xb155,
    0xb164, 0xb167, 0xb170, 0xb2fb, 0xbc00, 0xbc6a, 0xbc70, 0xbc7c, 0xbc80, 0xbc88, 0xbc90, 0xbc99,
    0xbc9c, 0xbc9f, 0xcf00, 0xcf2d, 0xcf30, 0xcf46, 0xcf50, 0xcfc3, 0xd000, 0xd0f5, 0xd100, 0xd126,
    0xd129, 0xd172, 0xd17b, 0xd1ea, 0xd200, 0xd245, 0xd2c0, 0xd2d3, 0xd2e0, 0xd2f3, 0xd300, 0xd356,
    0xd360, 0xd378, 0xd400, 0xd454, 0xd456, 0xd49c, 0xd49e, 0xd49f, 0xd4a2, 0xd4a2, 0xd4a5, 0xd4a6,
    0xd4a9, 0xd4ac, 0xd4ae, 0xd4b9, 0xd4bb, 0xd4bb, 0xd4bd, 0xd4c3, 0xd4c5, 0xd505, 0xd507, 0xd50a,
    0xd50d, 0xd514, 0xd516, 0xd51c, 0xd51e, 0xd539, 0xd53b, 0xd53e, 0xd540, 0xd544, 0xd546, 0xd546,
    0xd54a, 0xd550, 0xd552, 0xd6a5, 0xd6a8, 0xd7cb, 0xd7ce, 0xda8b, 0xda9b, 0xda9f, 0xdaa1, 0xdaaf,
    0xdf00, 0xdf1e, 0xdf25, 0xdf2a, 0xe000, 0xe006, 0xe008, 0xe018, 0xe01b, 0xe021, 0xe023, 0xe024,
    0xe026, 0xe02a, 0xe030, 0xe06d, 0xe08f, 0xe08f, 0xe100, 0xe12c, 0xe130, 0xe13d, 0xe140, 0xe149,
    0xe14e, 0xe14f, 0xe290, 0xe2ae, 0xe2c0, 0xe2f9, 0xe2ff, 0xe2ff, 0xe4d0, 0xe4f9, 0xe7e0, 0xe7e6,
    0xe7e8, 0xe7eb, 0xe7ed, 0xe7ee, 0xe7f0, 0xe7fe, 0xe800, 0xe8c4, 0xe8c7, 0xe8d6, 0xe900, 0xe94b,
    0xe950, 0xe959, 0xe95e, 0xe95f, 0xec71, 0xecb4, 0xed01, 0xed3d, 0xee00, 0xee03, 0xee05, 0xee1f,
    0xee21, 0xee22, 0xee24, 0xee24, 0xee27, 0xee27, 0xee29, 0xee32, 0xee34, 0xee37, 0xee39, 0xee39,
    0xee3b, 0xee3b, 0xee42, 0xee42, 0xee47, 0xee47, 0xee49, 0xee49, 0xee4b, 0xee4b, 0xee4d, 0xee4f,
    0xee51, 0xee52, 0xee54, 0xee54, 0xee57, 0xee57, 0xee59, 0xee59, 0xee5b, 0xee5b, 0xee5d, 0xee5d,
    0xee5f, 0xee5f, 0xee61, 0xee62, 0xee64, 0xee64, 0xee67, 0xee6a, 0xee6c, 0xee72, 0xee74, 0xee77,
    0xee79, 0xee7c, 0xee7e, 0xee7e, 0xee80, 0xee89, 0xee8b, 0xee9b, 0xeea1, 0xeea3, 0xeea5, 0xeea9,
    0xeeab, 0xeebb, 0xeef0, 0xeef1, 0xf000, 0xf02b, 0xf030, 0xf093, 0xf0a0, 0xf0ae, 0xf0b1, 0xf0bf,
    0xf0c1, 0xf0cf, 0xf0d1, 0xf0f5, 0xf100, 0xf1ad, 0xf1e6, 0xf202, 0xf210, 0xf23b, 0xf240, 0xf248,
    0xf250, 0xf251, 0xf260, 0xf265, 0xf300, 0xf6d7, 0xf6dc, 0xf6ec, 0xf6f0, 0xf6fc, 0xf700, 0xf776,
    0xf77b, 0xf7d9, 0xf7e0, 0xf7eb, 0xf7f0, 0xf7f0, 0xf800, 0xf80b, 0xf810, 0xf847, 0xf850, 0xf859,
    0xf860, 0xf887, 0xf890, 0xf8ad, 0xf8b0, 0xf8b1, 0xf900, 0xfa53, 0xfa60, 0xfa6d, 0xfa70, 0xfa7c,
    0xfa80, 0xfa88, 0xfa90, 0xfabd, 0xfabf, 0xfac5, 0xface, 0xfadb, 0xfae0, 0xfae8, 0xfaf0, 0xfaf8,
    0xfb00, 0xfb92, 0xfb94, 0xfbca, 0xfbf0, 0xfbf9,
};
static const uint16_t print_plane2[] = {
    0x0000, 0xa6df, 0xa700, 0xb739, 0xb740, 0xb81d, 0xb820, 0xcea1, 0xceb0, 0xebe0, 0xf800, 0xfa1d,
};
static const uint16_t print_plane3[] = {
    0x0000, 0x134a, 0x1350, 0x23af,
};
static const uint16_t print_plane14[] = {
    0x0100, 0x01ef,
};
/* END GENERATED PRINT TABLE */

/* in_ranges reports whether x lies in one of the n sorted ranges of t. */
static bool in_ranges(const uint16_t *t, size_t n, uint32_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (t[2 * m + 1] < x) lo = m + 1;
        else hi = m;
    }
    return lo < n && t[2 * lo] <= x;
}

/* is_print reports whether rune r is printable, as strconv.IsPrint. */
static bool is_print(uint32_t r) {
    if (r < 0x80) return r >= 0x20 && r < 0x7f;
    uint32_t lo = r & 0xffff;
    switch (r >> 16) {
    case 0: return in_ranges(print_plane0, sizeof print_plane0 / 4, lo);
    case 1: return in_ranges(print_plane1, sizeof print_plane1 / 4, lo);
    case 2: return in_ranges(print_plane2, sizeof print_plane2 / 4, lo);
    case 3: return in_ranges(print_plane3, sizeof print_plane3 / 4, lo);
    case 14: return in_ranges(print_plane14, sizeof print_plane14 / 4, lo);
    }
    return false;
}

uint32_t sluice_utf8_decode(const uint8_t *s, size_t n, size_t *width) {
    uint8_t c = s[0];
    *width = 1;
    if (c < 0x80) return c;
    uint8_t lo = 0x80, hi = 0xbf;
    size_t w;
    uint32_t r;
    if (c >= 0xc2 && c <= 0xdf) {
        w = 2;
        r = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        w = 3;
        r = c & 0x0f;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        w = 4;
        r = c & 0x07;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        return 0xfffd;
    }
    if (n < w) return 0xfffd;
    if (s[1] < lo || s[1] > hi) return 0xfffd;
    r = r << 6 | (s[1] & 0x3f);
    for (size_t i = 2; i < w; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) return 0xfffd;
        r = r << 6 | (s[i] & 0x3f);
    }
    *width = w;
    return r;
}

static const char hexdigits[] = "0123456789abcdef";

static void append_hex(sluice_buf *b, const char *prefix, uint32_t v, int digits) {
    sluice_buf_append_str(b, prefix);
    for (int i = digits - 1; i >= 0; i--) sluice_buf_append_byte(b, (uint8_t)hexdigits[(v >> (4 * i)) & 0xf]);
}

void sluice_buf_append_quoted(sluice_buf *b, const void *p, size_t n) {
    const uint8_t *s = p;
    sluice_buf_append_byte(b, '"');
    while (n > 0) {
        size_t w;
        uint32_t r = sluice_utf8_decode(s, n, &w);
        if (w == 1 && r == 0xfffd) {
            append_hex(b, "\\x", s[0], 2);
        } else if (r == '"' || r == '\\') {
            sluice_buf_append_byte(b, '\\');
            sluice_buf_append_byte(b, (uint8_t)r);
        } else if (is_print(r)) {
            sluice_buf_append(b, s, w);
        } else {
            switch (r) {
            case '\a': sluice_buf_append_str(b, "\\a"); break;
            case '\b': sluice_buf_append_str(b, "\\b"); break;
            case '\f': sluice_buf_append_str(b, "\\f"); break;
            case '\n': sluice_buf_append_str(b, "\\n"); break;
            case '\r': sluice_buf_append_str(b, "\\r"); break;
            case '\t': sluice_buf_append_str(b, "\\t"); break;
            case '\v': sluice_buf_append_str(b, "\\v"); break;
            default:
                if (r < ' ' || r == 0x7f) append_hex(b, "\\x", r, 2);
                else if (r < 0x10000) append_hex(b, "\\u", r, 4);
                else append_hex(b, "\\U", r, 8);
            }
        }
        s += w;
        n -= w;
    }
    sluice_buf_append_byte(b, '"');
}

/* ---------------------------------------------------------------------- */
/* Messages, errors and logs. */

static void log_buf(sluice_level level, const sluice_buf *b) {
    sluice_host_log((int32_t)level, b->ptr, (uint32_t)b->len);
}

void sluice_log_bytes(sluice_level level, const void *msg, size_t len) {
    sluice_host_log((int32_t)level, msg, (uint32_t)len);
}

void sluice_log(sluice_level level, const char *msg) { sluice_log_bytes(level, msg, strlen(msg)); }

/* vformat replaces b's content with the formatted text. */
static void vformat(sluice_buf *b, const char *format, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, format, ap2);
    va_end(ap2);
    b->len = 0;
    if (n < 0) {
        sluice_buf_append_str(b, format);
        return;
    }
    uint8_t *d = sluice_buf_reserve(b, (size_t)n + 1);
    vsnprintf((char *)d, (size_t)n + 1, format, ap);
    b->len = (size_t)n;
}

void sluice_logf(sluice_level level, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vformat(&g.msg, format, ap);
    va_end(ap);
    log_buf(level, &g.msg);
}

int sluice_error_bytes(const void *msg, size_t len) {
    g.err.len = 0;
    sluice_buf_append(&g.err, msg, len);
    g.err_set = true;
    return SLUICE_ERR;
}

int sluice_error(const char *msg) { return sluice_error_bytes(msg, strlen(msg)); }

int sluice_errorf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vformat(&g.err, format, ap);
    va_end(ap);
    g.err_set = true;
    return SLUICE_ERR;
}

/* clear_error forgets the previous callback's error before the next one. */
static inline void clear_error(void) { g.err_set = false; }

/* error_text returns the message of a callback that returned rc. */
static sluice_bytes error_text(int rc) {
    if (!g.err_set) {
        g.err.len = 0;
        sluice_buf_append_str(&g.err, "the callback failed with code ");
        sluice_buf_append_i64(&g.err, rc);
        sluice_buf_append_str(&g.err, " without a message (return sluice_error(...))");
    }
    return sluice_buf_bytes(&g.err);
}

/* msg_start empties the log message buffer and appends s. */
static sluice_buf *msg_start(const char *s) {
    g.msg.len = 0;
    sluice_buf_append_str(&g.msg, s);
    return &g.msg;
}

static void log_error_msg(void) { log_buf(SLUICE_LOG_ERROR, &g.msg); }

/* ---------------------------------------------------------------------- */
/* The operator definition. */

#if defined(SLUICE_NATIVE_TEST)
void sluice_test_use(const sluice_operator *op) {
    free(g.in);
    for (size_t i = 0; i < g.extra_len; i++) free(g.extra[i]);
    free(g.extra);
    sluice_buf_free(&g.kind_err);
    sluice_buf_free(&g.out);
    sluice_buf_free(&g.acc);
    free(g.members);
    free(g.mhdrs);
    free(g.hdrs);
    sluice_buf_free(&g.err);
    sluice_buf_free(&g.msg);
    sluice_buf_free(&g.planner.buf);
    free(g.reads);
    sluice_buf_free(&g.refusal);
    sluice_buf_free(&g.scratch);
    free(g.ops);
    free(g.vals);
    free(g.gets);
    memset(&g, 0, sizeof g);
    g.op = op;
}

const uint8_t *sluice_test_written(size_t *len) {
    *len = g.written_len;
    return g.written;
}
#endif

/*
 * check_operator finds the operator's kind, once; when the definition is
 * unusable, kind_err says why.
 */
static enum kind check_operator(void) {
    if (g.kind != KIND_UNCHECKED) return g.kind;
#if !defined(SLUICE_NATIVE_TEST)
    g.op = &sluice_operator_def;
#endif
    const sluice_operator *op = g.op;
    static const char *const names[] = {"map", "filter", "flatmap", "keyed", "plan", "agg_add", "window_fire", "join"};
    const bool set[] = {op->map != NULL,     op->filter != NULL,  op->flatmap != NULL,     op->keyed != NULL,
                        op->plan != NULL,    op->agg_add != NULL, op->window_fire != NULL, op->join != NULL};
    static const enum kind kinds[] = {KIND_MAP, KIND_FILTER, KIND_FLATMAP, KIND_KEYED,
                                      KIND_TXN, KIND_AGG,    KIND_WINDOW,  KIND_JOIN};
    sluice_buf *e = &g.kind_err;
    int first = -1;
    g.kind = KIND_INVALID;
    for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++) {
        if (!set[i]) continue;
        if (first >= 0) {
            sluice_buf_append_str(e, "SLUICE_OPERATOR sets both ");
            sluice_buf_append_str(e, names[first]);
            sluice_buf_append_str(e, " and ");
            sluice_buf_append_str(e, names[i]);
            sluice_buf_append_str(e, ": set exactly one of map, filter, flatmap, keyed, plan, agg_add, window_fire "
                                     "or join");
            return g.kind;
        }
        first = i;
    }
    if (first < 0) {
        sluice_buf_append_str(e, "SLUICE_OPERATOR sets no record callback: set exactly one of map, filter, flatmap, "
                                 "keyed, plan, agg_add, window_fire or join");
        return g.kind;
    }
    if ((kinds[first] == KIND_AGG) != (op->agg_merge != NULL && op->agg_fire != NULL) ||
        (kinds[first] != KIND_AGG && (op->agg_merge != NULL || op->agg_fire != NULL))) {
        sluice_buf_append_str(e, "SLUICE_OPERATOR: an aggregate sets agg_add, agg_merge and agg_fire, all three, "
                                 "and no other operator sets agg_merge or agg_fire");
        return g.kind;
    }
    if (kinds[first] != KIND_TXN) {
        if (op->funcs != NULL || op->func_count != 0 || op->post != NULL) {
            sluice_buf_append_str(e, "SLUICE_OPERATOR sets funcs or post, which serve transactional operators, with ");
            sluice_buf_append_str(e, names[first]);
            sluice_buf_append_str(e, " rather than plan");
            return g.kind;
        }
    } else {
        if (op->funcs == NULL || op->func_count == 0) {
            sluice_buf_append_str(e, "SLUICE_OPERATOR sets plan but no funcs: every operation names a function "
                                     "(set them with SLUICE_FUNCS)");
            return g.kind;
        }
        for (size_t i = 0; i < op->func_count; i++) {
            if (op->funcs[i] == NULL) {
                sluice_buf_append_str(e, "SLUICE_OPERATOR: funcs[");
                sluice_buf_append_u64(e, i);
                sluice_buf_append_str(e, "] is NULL");
                return g.kind;
            }
        }
    }
    g.kind = kinds[first];
    return g.kind;
}

/* kind_name names what an operator of kind serves, for messages. */
static const char *kind_name(enum kind k) {
    switch (k) {
    case KIND_MAP: return "map";
    case KIND_FILTER: return "filter";
    case KIND_FLATMAP: return "flatmap";
    case KIND_KEYED: return "keyed";
    case KIND_TXN: return "plan";
    case KIND_AGG: return "agg_add";
    case KIND_WINDOW: return "window_fire";
    case KIND_JOIN: return "join";
    default: return "no";
    }
}

/*
 * usable returns true when the operator can serve export; otherwise it
 * logs why and returns false.
 */
static bool usable(const char *export, bool txn) {
    enum kind k = check_operator();
    if (k == KIND_INVALID) {
        log_buf(SLUICE_LOG_ERROR, &g.kind_err);
        return false;
    }
    if (k == KIND_AGG || k == KIND_WINDOW || k == KIND_JOIN) {
        sluice_buf *m = msg_start(export);
        sluice_buf_append_str(m, " called, but this operator's SLUICE_OPERATOR sets ");
        sluice_buf_append_str(m, kind_name(k));
        sluice_buf_append_str(m, k == KIND_JOIN ? ": it serves join operators (ABI.md section 14)"
                                                : ": it serves aggregate or window operators (ABI.md section 13)");
        log_error_msg();
        return false;
    }
    if ((k == KIND_TXN) == txn) return true;
    sluice_buf *m = msg_start(export);
    sluice_buf_append_str(m, " called, but this operator's SLUICE_OPERATOR sets ");
    sluice_buf_append_str(m, kind_name(k));
    if (txn)
        sluice_buf_append_str(m, ", not plan: it serves map, filter, flatmap or keyed operators, not transactional "
                                 "ones");
    else
        sluice_buf_append_str(m, ": it serves transactional operators (sluice_plan, sluice_apply, sluice_post)");
    log_error_msg();
    return false;
}

/* ---------------------------------------------------------------------- */
/* Memory handed to the host. */

SLUICE_EXPORT("sluice_abi_version") int32_t sluice_abi_version(void) { return SLUICE_ABI_VERSION; }

/*
 * sluice_kinds returns the bit of the operator kind SLUICE_OPERATOR gives
 * (ABI.md section 12), which `sluice plugin build` writes into the
 * module's sluice.kinds section, or 0, after logging why, when the
 * definition is unusable.
 */
SLUICE_EXPORT("sluice_kinds") int32_t sluice_kinds(void) {
    switch (check_operator()) {
    case KIND_MAP: return SLUICE_KIND_MAP;
    case KIND_FILTER: return SLUICE_KIND_FILTER;
    case KIND_FLATMAP: return SLUICE_KIND_FLATMAP;
    case KIND_KEYED: return SLUICE_KIND_KEYED;
    case KIND_TXN: return SLUICE_KIND_TRANSACTIONAL;
    case KIND_AGG: return SLUICE_KIND_AGGREGATE;
    case KIND_WINDOW: return SLUICE_KIND_WINDOW;
    case KIND_JOIN: return SLUICE_KIND_JOIN;
    default: log_buf(SLUICE_LOG_ERROR, &g.kind_err); return 0;
    }
}

/*
 * sluice_features declares what the SDK understands beyond version 1 as
 * first published (ABI.md section 9): the input of each record.
 */
SLUICE_EXPORT("sluice_features") int32_t sluice_features(void) { return SLUICE_FEATURE_INPUTS; }

SLUICE_EXPORT("sluice_alloc") uint8_t *sluice_alloc(int32_t size) {
    if (size < 0 || size > MAX_ALLOC) return NULL;
    size_t n = (size_t)size;
    if (g.pending) {
        /* A second region for the same call: distinct, and kept until
         * the next call's first alloc. */
        if (g.extra_len == g.extra_cap) {
            size_t cap = g.extra_cap * 2 + 4;
            uint8_t **e = realloc(g.extra, cap * sizeof *e);
            if (e == NULL) return NULL;
            g.extra = e;
            g.extra_cap = cap;
        }
        uint8_t *b = malloc(n > 0 ? n : 1);
        if (b != NULL) g.extra[g.extra_len++] = b;
        return b;
    }
    /* A new call's first region: the host writes no earlier region again. */
    for (size_t i = 0; i < g.extra_len; i++) free(g.extra[i]);
    g.extra_len = 0;
    if (g.in == NULL || g.in_cap < n) {
        size_t c = n + n / 4;
        if (c < 4096) c = 4096;
        uint8_t *b = malloc(c);
        if (b == NULL) return NULL;
        free(g.in);
        g.in = b;
        g.in_cap = c;
    }
    g.pending = true;
    return g.in;
}

/* consumed ends the call that consumed the regions handed out. */
static inline void consumed(void) { g.pending = false; }

/* ---------------------------------------------------------------------- */
/* Records. */

/*
 * decode_record decodes the record at b[off:len) into r, its headers into
 * g.hdrs, and returns the offset after it, or 0 when it is malformed.
 */
static size_t decode_record(uint8_t *b, size_t len, size_t off, sluice_record *r) {
    if (len - off < RECORD_MIN) return 0;
    uint8_t *p = b + off;
    uint32_t size = ld32(p);
    /* The SDK declares SLUICE_FEATURE_INPUTS: the flags hold the record's
     * input and no other bit. */
    uint32_t flags = ld32(p + 8);
    if (size < RECORD_FIXED || size > len - off - 4 || flags > SLUICE_FLAGS_INPUT) return 0;
    uint32_t klen = ld32(p + 20);
    if (klen > size - RECORD_FIXED) return 0;
    uint32_t vlen = ld32(p + 24 + klen);
    if (vlen > size - RECORD_FIXED - klen) return 0;
    uint32_t nh = ld32(p + 28 + klen + vlen);
    r->time = (int64_t)ld64(p + 12);
    r->input = flags;
    r->key = sluice_bytes_of(p + 24, klen);
    r->value = sluice_bytes_of(p + 28 + klen, vlen);
    size_t rest = size - RECORD_FIXED - klen - vlen;
    if (nh == 0) {
        r->headers = NULL;
        r->header_count = 0;
        return rest == 0 ? off + 4 + size : 0;
    }
    if (nh > rest / 8) return 0;
    g.hdrs = grow(g.hdrs, &g.hdrs_cap, nh, sizeof *g.hdrs);
    uint8_t *h = p + 32 + klen + vlen;
    for (uint32_t i = 0; i < nh; i++) {
        if (rest < 4) return 0;
        uint32_t n = ld32(h);
        if (n > rest - 4) return 0;
        g.hdrs[i].name = sluice_bytes_of(h + 4, n);
        h += 4 + n;
        rest -= 4 + n;
        if (rest < 4) return 0;
        n = ld32(h);
        if (n > rest - 4) return 0;
        g.hdrs[i].value = sluice_bytes_of(h + 4, n);
        h += 4 + n;
        rest -= 4 + n;
    }
    if (rest != 0) return 0;
    r->headers = g.hdrs;
    r->header_count = nh;
    return off + 4 + size;
}

/* append_record appends r's encoding, with origin, to out. */
static void append_record(sluice_buf *out, uint32_t origin, const sluice_record *r) {
    uint64_t size = (uint64_t)RECORD_FIXED + r->key.len + r->value.len;
    for (size_t i = 0; i < r->header_count; i++) size += 8 + (uint64_t)r->headers[i].name.len + r->headers[i].value.len;
    if (size > UINT32_MAX - 4) sluice_panic("sluice_emit: a record over 4 GiB");
    uint8_t *d = sluice_buf_reserve(out, 4 + (size_t)size);
    st32(d, (uint32_t)size);
    st32(d + 4, origin);
    st32(d + 8, 0); /* flags: an output has no input */
    st64(d + 12, (uint64_t)r->time);
    st32(d + 20, (uint32_t)r->key.len);
    d += 24;
    copy(d, r->key.ptr, r->key.len);
    d += r->key.len;
    st32(d, (uint32_t)r->value.len);
    copy(d + 4, r->value.ptr, r->value.len);
    d += 4 + r->value.len;
    st32(d, (uint32_t)r->header_count);
    d += 4;
    for (size_t i = 0; i < r->header_count; i++) {
        const sluice_header *h = &r->headers[i];
        st32(d, (uint32_t)h->name.len);
        copy(d + 4, h->name.ptr, h->name.len);
        d += 4 + h->name.len;
        st32(d, (uint32_t)h->value.len);
        copy(d + 4, h->value.ptr, h->value.len);
        d += 4 + h->value.len;
    }
    out->len += 4 + (size_t)size;
}

/* out_start empties the output batch. */
static void out_start(void) {
    g.out.len = 0;
    sluice_buf_reserve(&g.out, INITIAL_OUT);
    st32(g.out.ptr, 0);
    g.out.len = 4;
    g.out_count = 0;
}

/* flush hands the gathered outputs to the host and starts a new batch. */
static void flush(void) {
    st32(g.out.ptr, g.out_count);
    sluice_host_emit(g.out.ptr, (uint32_t)g.out.len);
    g.out.len = 4;
    g.out_count = 0;
}

/* out_end hands over what is left and lets go of a grown buffer. */
static void out_end(void) {
    if (g.out_count > 0) flush();
    if (g.out.cap > MAX_KEPT_OUT) sluice_buf_free(&g.out);
}

/* An emitting callback's span of the output (the outputs before it and
 * their count). */
struct emitting {
    size_t mark;
    uint32_t count;
};

/* begin_emitting starts a callback that may emit for origin. */
static struct emitting begin_emitting(uint32_t origin) {
    g.origin = origin;
    struct emitting e = {g.out.len, g.out_count};
    clear_error();
    g.phase = PHASE_EMITTING;
    return e;
}

/* end_emitting ends the callback begun as e, which returned rc: it returns
 * true when the callback succeeded; otherwise it drops what the callback
 * emitted and returns false, for the caller to reject its input. */
static bool end_emitting(struct emitting e, int rc) {
    g.phase = PHASE_IDLE;
    if (rc != SLUICE_OK) {
        g.out.len = e.mark;
        g.out_count = e.count;
        return false;
    }
    if (g.out.len >= FLUSH_SIZE) flush();
    return true;
}

void sluice_emit(const sluice_record *r) {
    if (g.phase != PHASE_EMITTING) sluice_panic("sluice_emit called outside a flatmap, keyed, post, agg_fire, window_fire or join callback");
    append_record(&g.out, g.origin, r);
    g.out_count++;
}

/* reject dead-letters input origin with the current callback's error. */
static void reject(uint32_t origin, int rc) {
    sluice_bytes m = error_text(rc);
    sluice_host_reject(origin, m.ptr, (uint32_t)m.len);
}

/* ---------------------------------------------------------------------- */
/* Configuration. */

/* is_space reports the white space Go's bytes.TrimSpace trims (ASCII). */
static bool is_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* trim_space returns b without leading and trailing Unicode white space. */
static sluice_bytes trim_space(sluice_bytes b) {
    for (;;) {
        size_t w;
        if (b.len == 0) return b;
        if (is_space(b.ptr[0])) {
            b.ptr++, b.len--;
            continue;
        }
        uint32_t r = sluice_utf8_decode(b.ptr, b.len, &w);
        bool space = r == 0x85 || r == 0xa0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 ||
                     r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000;
        if (!space || w == 1) break;
        b.ptr += w, b.len -= w;
    }
    for (;;) {
        if (b.len == 0) return b;
        if (is_space(b.ptr[b.len - 1])) {
            b.len--;
            continue;
        }
        /* The last rune: step back over continuation bytes. */
        size_t s = b.len - 1;
        while (s > 0 && b.len - s < 4 && (b.ptr[s] & 0xc0) == 0x80) s--;
        size_t w;
        uint32_t r = sluice_utf8_decode(b.ptr + s, b.len - s, &w);
        bool space = r == 0x85 || r == 0xa0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 ||
                     r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000;
        if (!space || s + w != b.len) return b;
        b.len = s;
    }
}

SLUICE_EXPORT("sluice_configure") int32_t sluice_configure(uint8_t *config, uint32_t len) {
    int32_t status = SLUICE_STATUS_OK;
    if (check_operator() == KIND_INVALID) {
        sluice_buf *m = msg_start("invalid configuration: ");
        sluice_buf_append(m, g.kind_err.ptr, g.kind_err.len);
        log_error_msg();
        consumed();
        return SLUICE_STATUS_BAD_CONFIG;
    }
    sluice_bytes c = trim_space(sluice_bytes_of(config, len));
    if (g.op->configure == NULL) {
        if (!(c.len == 0 || sluice_bytes_equal(c, SLUICE_LIT("null")) || sluice_bytes_equal(c, SLUICE_LIT("{}")))) {
            msg_start("invalid configuration: this operator takes no configuration (its SLUICE_OPERATOR sets no "
                      "configure callback)");
            log_error_msg();
            status = SLUICE_STATUS_BAD_CONFIG;
        }
        consumed();
        return status;
    }
    sluice_bytes arg = c.len == 0 ? SLUICE_LIT("null") : sluice_bytes_of(config, len);
    clear_error();
    g.phase = PHASE_CONFIGURE;
    int rc = g.op->configure(arg.ptr, arg.len);
    g.phase = PHASE_IDLE;
    if (rc != SLUICE_OK) {
        sluice_bytes e = error_text(rc);
        sluice_buf *m = msg_start("invalid configuration: ");
        sluice_buf_append(m, e.ptr, e.len);
        log_error_msg();
        status = SLUICE_STATUS_BAD_CONFIG;
    }
    consumed();
    return status;
}

/* ---------------------------------------------------------------------- */
/* Stateless and keyed operators. */

/* batch_error logs why a batch (or events) is malformed. */
static void batch_error(const char *what, const uint8_t *b, size_t len) {
    sluice_buf *m = msg_start(what);
    if (len < 4) {
        sluice_buf_append_str(m, ": shorter than its record count (");
        sluice_buf_append_u64(m, len);
        sluice_buf_append_str(m, " bytes)");
        log_error_msg();
        return;
    }
    uint32_t count = ld32(b);
    size_t off = 4;
    uint32_t i = 0;
    sluice_record r;
    for (; i < count; i++) {
        size_t next = decode_record((uint8_t *)b, len, off, &r);
        if (next == 0) break;
        off = next;
    }
    sluice_buf_append_str(m, ": record ");
    sluice_buf_append_u64(m, i);
    sluice_buf_append_str(m, " of ");
    sluice_buf_append_u64(m, count);
    sluice_buf_append_str(m, " at byte ");
    sluice_buf_append_u64(m, off);
    sluice_buf_append_str(m, i < count ? ": malformed or truncated record" : ": bytes after the last record");
    log_error_msg();
}

/*
 * end_run ends the pending run of forwarded records before record i,
 * which is not forwarded and lies at batch[at:next]: the run joins the
 * outputs with one copy, and the next run starts after record i.
 */
static void end_run(const uint8_t *batch, size_t at, size_t next, uint32_t i) {
    if (g.run_first < i) {
        sluice_buf_append(&g.out, batch + g.run_start, at - g.run_start);
        g.out_count += i - g.run_first;
        if (g.out.len >= FLUSH_SIZE) flush();
    }
    g.run_start = next;
    g.run_first = i + 1;
}

/*
 * run_forwarding runs a map or filter callback over the count records of
 * batch and returns the offset after the last, or 0 for a malformed one.
 */
static size_t run_forwarding(uint8_t *batch, size_t len, uint32_t count) {
    sluice_record *r = &g.rec;
    const sluice_operator *op = g.op;
    size_t off = 4;
    g.run_start = off;
    g.run_first = 0;
    for (uint32_t i = 0; i < count; i++) {
        size_t next = decode_record(batch, len, off, r);
        if (next == 0) return 0;
        sluice_record in = *r;
        int rc;
        bool out = true;
        clear_error();
        g.phase = PHASE_RECORD;
        if (op->map != NULL) {
            rc = op->map(r);
        } else {
            bool keep = false;
            rc = op->filter(r, &keep);
            out = keep;
        }
        g.phase = PHASE_IDLE;
        if (rc != SLUICE_OK) {
            end_run(batch, off, next, i);
            reject(i, rc);
        } else if (!out) {
            end_run(batch, off, next, i);
        } else if (op->filter != NULL ||
                   (r->key.ptr == in.key.ptr && r->key.len == in.key.len && r->value.ptr == in.value.ptr &&
                    r->value.len == in.value.len && r->time == in.time && r->headers == in.headers &&
                    r->header_count == in.header_count)) {
            st32(batch + off + 4, i); /* forwarded, changed in place or not */
        } else {
            end_run(batch, off, next, i);
            append_record(&g.out, i, r);
            g.out_count++;
            if (g.out.len >= FLUSH_SIZE) flush();
        }
        off = next;
    }
    if (g.run_first == 0 && off == len) {
        /* Every record was forwarded: the batch is the output. */
        if (count > 0) sluice_host_emit(batch, (uint32_t)len);
        return off;
    }
    end_run(batch, off, off, count);
    return off;
}

/* run_emitting runs a flatmap or keyed callback over the batch. */
static size_t run_emitting(uint8_t *batch, size_t len, uint32_t count) {
    sluice_record *r = &g.rec;
    int (*fn)(const sluice_record *) = g.op->flatmap != NULL ? g.op->flatmap : g.op->keyed;
    size_t off = 4;
    for (uint32_t i = 0; i < count; i++) {
        size_t next = decode_record(batch, len, off, r);
        if (next == 0) return 0;
        off = next;
        struct emitting e = begin_emitting(i);
        int rc = fn(r);
        if (!end_emitting(e, rc)) reject(i, rc);
    }
    return off;
}

static int32_t process_batch(uint8_t *batch, size_t len) {
    if (!usable("sluice_process", false)) return SLUICE_STATUS_ERROR;
    if (len < 4) {
        batch_error("input batch", batch, len);
        return SLUICE_STATUS_ERROR;
    }
    uint32_t count = ld32(batch);
    out_start();
    size_t end = (g.kind == KIND_FLATMAP || g.kind == KIND_KEYED) ? run_emitting(batch, len, count)
                                                                  : run_forwarding(batch, len, count);
    if (end != len) {
        batch_error("input batch", batch, len);
        return SLUICE_STATUS_ERROR;
    }
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_process") int32_t sluice_process(uint8_t *batch, uint32_t len) {
    int32_t status = process_batch(batch, len);
    consumed();
    return status;
}

/* ---------------------------------------------------------------------- */
/* Keyed state. */

int32_t sluice_table_id(const char *name) { return sluice_host_table_id(name, (uint32_t)strlen(name)); }

static void must_record(const char *fn) {
    if (g.phase != PHASE_EMITTING && g.phase != PHASE_RECORD) {
        sluice_buf *m = msg_start(fn);
        sluice_buf_append_str(m, " called outside a keyed callback");
        sluice_buf_append_byte(m, 0);
        sluice_panic((const char *)m->ptr);
    }
}

bool sluice_state_get(int32_t table, sluice_bytes key, sluice_buf *value) {
    must_record("sluice_state_get");
    for (int attempt = 0;; attempt++) {
        int32_t n = sluice_host_state_get(table, key.ptr, (uint32_t)key.len, value->ptr, (uint32_t)value->cap);
        if (n == SLUICE_STATUS_NOT_FOUND) {
            value->len = 0;
            return false;
        }
        if (n < 0) sluice_panic("state_get returned an unknown status");
        if ((size_t)n <= value->cap) {
            value->len = (size_t)n;
            return true;
        }
        if (attempt > 0) sluice_panic("state_get reported a larger value after a retry");
        value->len = 0;
        sluice_buf_reserve(value, (size_t)n + (size_t)n / 4);
    }
}

void sluice_state_put(int32_t table, sluice_bytes key, sluice_bytes value) {
    must_record("sluice_state_put");
    sluice_host_state_put(table, key.ptr, (uint32_t)key.len, value.ptr, (uint32_t)value.len);
}

void sluice_state_delete(int32_t table, sluice_bytes key) {
    must_record("sluice_state_delete");
    sluice_host_state_delete(table, key.ptr, (uint32_t)key.len);
}

/* ---------------------------------------------------------------------- */
/* Transactional operators: plan. */

static void append_field(sluice_buf *b, const void *p, size_t n) {
    uint8_t *d = sluice_buf_reserve(b, 4 + n);
    st32(d, (uint32_t)n);
    copy(d + 4, p, n);
    b->len += 4 + n;
}

static void declare(sluice_planner *p, uint32_t flags, uint32_t table, sluice_bytes key, uint32_t fn,
                    sluice_bytes arg, const sluice_key *reads, size_t read_count) {
    if (p == NULL || !p->active) sluice_panic("sluice_planner used outside the plan callback it was passed to");
    if (fn >= p->nfn) {
        if (!p->misuse) {
            p->misuse = true;
            p->bad_fn = fn;
        }
        return;
    }
    uint8_t *d = sluice_buf_reserve(&p->buf, 20);
    st32(d, p->event);
    st32(d + 4, fn);
    st32(d + 8, flags);
    st32(d + 12, table);
    p->buf.len += 16;
    append_field(&p->buf, key.ptr, key.len);
    d = sluice_buf_reserve(&p->buf, 4);
    st32(d, (uint32_t)read_count);
    p->buf.len += 4;
    for (size_t i = 0; i < read_count; i++) {
        d = sluice_buf_reserve(&p->buf, 4);
        st32(d, reads[i].table);
        p->buf.len += 4;
        append_field(&p->buf, reads[i].key.ptr, reads[i].key.len);
    }
    append_field(&p->buf, arg.ptr, arg.len);
}

void sluice_plan_write(sluice_planner *p, uint32_t table, sluice_bytes key, uint32_t fn, sluice_bytes arg,
                       const sluice_key *reads, size_t read_count) {
    declare(p, 0, table, key, fn, arg, reads, read_count);
}

void sluice_plan_nondet(sluice_planner *p, uint32_t table, uint32_t fn, sluice_bytes arg, const sluice_key *reads,
                        size_t read_count) {
    declare(p, 1, table, sluice_bytes_of(NULL, 0), fn, arg, reads, read_count);
}

static int32_t plan_batch(uint8_t *events, size_t len) {
    if (!usable("sluice_plan", true)) return SLUICE_STATUS_ERROR;
    if (len < 4) {
        batch_error("input batch", events, len);
        return SLUICE_STATUS_ERROR;
    }
    uint32_t count = ld32(events);
    sluice_planner *p = &g.planner;
    p->buf.len = 0;
    p->nfn = g.op->func_count;
    p->misuse = false;
    size_t off = 4;
    int32_t status = SLUICE_STATUS_OK;
    for (uint32_t i = 0; i < count; i++) {
        off = decode_record(events, len, off, &g.rec);
        if (off == 0) break;
        p->active = true;
        p->event = i;
        clear_error();
        g.phase = PHASE_PLAN;
        int rc = g.op->plan(&g.rec, p);
        g.phase = PHASE_IDLE;
        p->active = false;
        if (rc != SLUICE_OK || p->misuse) {
            sluice_buf *m = msg_start("plan: event ");
            sluice_buf_append_u64(m, i);
            sluice_buf_append_str(m, ": ");
            if (rc != SLUICE_OK) {
                sluice_bytes e = error_text(rc);
                sluice_buf_append(m, e.ptr, e.len);
            } else {
                sluice_buf_append_str(m, "operation names function ");
                sluice_buf_append_u64(m, p->bad_fn);
                sluice_buf_append_str(m, ", but the operator has ");
                sluice_buf_append_u64(m, p->nfn);
                sluice_buf_append_str(m, " functions (funcs)");
            }
            log_error_msg();
            status = SLUICE_STATUS_ERROR;
            break;
        }
        if (p->buf.len >= FLUSH_SIZE) {
            sluice_host_txn_plan(p->buf.ptr, (uint32_t)p->buf.len);
            p->buf.len = 0;
        }
    }
    if (status == SLUICE_STATUS_OK && off != len) {
        batch_error("input batch", events, len);
        status = SLUICE_STATUS_ERROR;
    }
    if (status == SLUICE_STATUS_OK && p->buf.len > 0) sluice_host_txn_plan(p->buf.ptr, (uint32_t)p->buf.len);
    p->buf.len = 0;
    if (p->buf.cap > MAX_KEPT_OUT) sluice_buf_free(&p->buf);
    return status;
}

SLUICE_EXPORT("sluice_plan") int32_t sluice_plan(uint8_t *events, uint32_t len) {
    int32_t status = plan_batch(events, len);
    consumed();
    return status;
}

/* ---------------------------------------------------------------------- */
/* Transactional operators: decoding apply requests and outcomes. */

/*
 * reader reads the transactional encodings, keeping the first failure
 * with its offset, as package abi's decoders report it.
 */
typedef enum fail { FAIL_NONE, FAIL_TRUNCATED, FAIL_LENGTH, FAIL_COUNT, FAIL_FLAG, FAIL_TRAILING } fail;

typedef struct reader {
    uint8_t *b;
    size_t len, p;
    fail fail;
    const char *field;
    uint64_t n1, n2; /* numbers of the reason */
    size_t at;
} reader;

static reader new_reader(uint8_t *b, size_t len) {
    reader r = {b, len, 0, FAIL_NONE, "", 0, 0, 0};
    return r;
}

static void rfail(reader *r, fail f, const char *field, uint64_t n1, uint64_t n2, size_t at) {
    if (r->fail != FAIL_NONE) return;
    r->fail = f;
    r->field = field;
    r->n1 = n1;
    r->n2 = n2;
    r->at = at;
}

static uint32_t ru32(reader *r, const char *field) {
    if (r->fail != FAIL_NONE) return 0;
    if (r->len - r->p < 4) {
        rfail(r, FAIL_TRUNCATED, field, 0, 0, r->p);
        return 0;
    }
    uint32_t v = ld32(r->b + r->p);
    r->p += 4;
    return v;
}

static sluice_bytes rbytes(reader *r, const char *field) {
    uint32_t n = ru32(r, field);
    if (r->fail != FAIL_NONE) return sluice_bytes_of(NULL, 0);
    if (n > r->len - r->p) {
        rfail(r, FAIL_LENGTH, field, 0, 0, r->p - 4);
        return sluice_bytes_of(NULL, 0);
    }
    sluice_bytes b = sluice_bytes_of(r->b + r->p, n);
    r->p += n;
    return b;
}

static size_t rcount(reader *r, const char *field, uint64_t min) {
    uint32_t n = ru32(r, field);
    if (r->fail == FAIL_NONE && (uint64_t)n * min > r->len - r->p) {
        rfail(r, FAIL_COUNT, field, n, r->len - r->p, r->p - 4);
        return 0;
    }
    return n;
}

static bool rflag(reader *r, const char *field) {
    uint32_t v = ru32(r, field);
    if (r->fail == FAIL_NONE && v > 1) rfail(r, FAIL_FLAG, field, v, 0, r->p - 4);
    return v == 1;
}

static sluice_value rvalue(reader *r, const char *field) {
    sluice_value v;
    v.found = rflag(r, field);
    v.bytes = rbytes(r, field);
    return v;
}

/* rend fails r unless all its bytes were read. */
static void rend(reader *r) {
    if (r->fail == FAIL_NONE && r->p != r->len) rfail(r, FAIL_TRAILING, "", r->len - r->p, 0, r->p);
}

/* reader_error appends r's failure, as "malformed WHAT at byte N: reason". */
static void reader_error(sluice_buf *m, const reader *r, const char *what) {
    sluice_buf_append_str(m, "malformed ");
    sluice_buf_append_str(m, what);
    sluice_buf_append_str(m, " at byte ");
    sluice_buf_append_u64(m, r->at);
    sluice_buf_append_str(m, ": ");
    switch (r->fail) {
    case FAIL_TRUNCATED:
        sluice_buf_append_str(m, "truncated ");
        sluice_buf_append_str(m, r->field);
        break;
    case FAIL_LENGTH:
        sluice_buf_append_str(m, r->field);
        sluice_buf_append_str(m, " length exceeds the input");
        break;
    case FAIL_COUNT:
        sluice_buf_append_str(m, r->field);
        sluice_buf_append_byte(m, ' ');
        sluice_buf_append_u64(m, r->n1);
        sluice_buf_append_str(m, " does not fit in the ");
        sluice_buf_append_u64(m, r->n2);
        sluice_buf_append_str(m, " bytes left");
        break;
    case FAIL_FLAG:
        sluice_buf_append_str(m, r->field);
        sluice_buf_append_str(m, " is ");
        sluice_buf_append_u64(m, r->n1);
        sluice_buf_append_str(m, ", want 0 or 1");
        break;
    default:
        sluice_buf_append_u64(m, r->n1);
        sluice_buf_append_str(m, " trailing bytes");
    }
}

/* decode_apply decodes an apply request into g.call, its reads into g.reads. */
static bool decode_apply(reader *r) {
    sluice_call *c = &g.call;
    if (r->len < 8) {
        rfail(r, FAIL_TRUNCATED, "result slot", 0, 0, 0);
        return false;
    }
    r->p = 8;
    c->fn = ru32(r, "fn");
    c->event = ru32(r, "event");
    c->op = ru32(r, "op");
    uint32_t flags = ru32(r, "flags");
    c->nondet = (flags & 1) != 0;
    c->own.found = (flags & 2) != 0;
    c->table = ru32(r, "table");
    c->key = rbytes(r, "key");
    c->own.bytes = rbytes(r, "own value");
    size_t n = rcount(r, "read count", 16);
    if (r->fail == FAIL_NONE) g.reads = grow(g.reads, &g.reads_cap, n, sizeof *g.reads);
    for (size_t i = 0; i < n && r->fail == FAIL_NONE; i++) {
        g.reads[i].table = ru32(r, "read table");
        g.reads[i].key = rbytes(r, "read key");
        g.reads[i].value = rvalue(r, "read value");
    }
    c->reads = g.reads;
    c->read_count = r->fail == FAIL_NONE ? n : 0;
    c->arg = rbytes(r, "argument");
    rend(r);
    return r->fail == FAIL_NONE;
}

/*
 * decode_outcome decodes one event's outcome into o, its arrays into
 * g.ops, g.vals and g.gets.
 */
static bool decode_outcome(reader *r, sluice_outcome *o) {
    o->committed = rflag(r, "committed");
    size_t n = rcount(r, "operation count", 20);
    if (r->fail != FAIL_NONE) return false;
    g.ops = grow(g.ops, &g.ops_cap, n, sizeof *g.ops);
    size_t nv = 0, ng = 0;
    for (size_t i = 0; i < n && r->fail == FAIL_NONE; i++) {
        sluice_op_outcome *op = &g.ops[i];
        op->executed = rflag(r, "executed");
        op->own = rvalue(r, "own value");
        size_t nr = rcount(r, "read count", 8);
        if (r->fail != FAIL_NONE) break;
        g.vals = grow(g.vals, &g.vals_cap, nv + nr, sizeof *g.vals);
        op->reads = NULL; /* set below: the array may move */
        op->read_count = nr;
        for (size_t j = 0; j < nr && r->fail == FAIL_NONE; j++) g.vals[nv++] = rvalue(r, "read value");
        size_t ngets = rcount(r, "get count", 16);
        if (r->fail != FAIL_NONE) break;
        g.gets = grow(g.gets, &g.gets_cap, ng + ngets, sizeof *g.gets);
        op->get_count = ngets;
        for (size_t j = 0; j < ngets && r->fail == FAIL_NONE; j++) {
            sluice_kv *kv = &g.gets[ng++];
            kv->table = ru32(r, "get table");
            kv->key = rbytes(r, "get key");
            kv->value = rvalue(r, "get value");
        }
    }
    if (r->fail != FAIL_NONE) return false;
    nv = ng = 0;
    for (size_t i = 0; i < n; i++) {
        g.ops[i].reads = g.ops[i].read_count > 0 ? g.vals + nv : NULL;
        g.ops[i].gets = g.ops[i].get_count > 0 ? g.gets + ng : NULL;
        nv += g.ops[i].read_count;
        ng += g.ops[i].get_count;
    }
    o->ops = g.ops;
    o->op_count = n;
    return true;
}

/* ---------------------------------------------------------------------- */
/* Transactional operators: apply. */

static sluice_effect effect(int32_t code, const void *p, size_t n) {
    sluice_effect e;
    e.code = code;
    e.ptr = p;
    e.len = n;
    return e;
}

sluice_effect sluice_write(const void *v, size_t len) { return effect(SLUICE_STATUS_OK, v, len); }
sluice_effect sluice_keep(void) { return effect(1, NULL, 0); }
sluice_effect sluice_delete(void) { return effect(2, NULL, 0); }
sluice_effect sluice_abort(void) { return effect(3, NULL, 0); }

sluice_effect sluice_fail_bytes(const void *msg, size_t len) {
    sluice_error_bytes(msg, len);
    return effect(EFFECT_FAIL, NULL, 0);
}

sluice_effect sluice_fail(const char *msg) { return sluice_fail_bytes(msg, strlen(msg)); }

sluice_effect sluice_failf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vformat(&g.err, format, ap);
    va_end(ap);
    g.err_set = true;
    return effect(EFFECT_FAIL, NULL, 0);
}

static void must_apply(const sluice_call *c, const char *fn) {
    if (g.phase != PHASE_APPLY || c != &g.call) {
        sluice_buf *m = msg_start(fn);
        sluice_buf_append_str(m, " called outside the function call its sluice_call was passed to");
        sluice_buf_append_byte(m, 0);
        sluice_panic((const char *)m->ptr);
    }
}

/* refuse records the first access the host refused for this operation. */
static void refuse(const char *what, uint32_t table, sluice_bytes key) {
    if (g.refused) return;
    g.refused = true;
    sluice_buf *m = &g.refusal;
    m->len = 0;
    sluice_buf_append_str(m, "sluice: state access outside the operation's declaration: ");
    sluice_buf_append_str(m, what);
    sluice_buf_append_str(m, " of table ");
    sluice_buf_append_u64(m, table);
    sluice_buf_append_str(m, " key ");
    sluice_buf_append_quoted(m, key.ptr, key.len);
}

sluice_value sluice_call_read(sluice_call *c, size_t i) {
    must_apply(c, "sluice_call_read");
    if (i < c->read_count) return c->reads[i].value;
    if (!g.refused) {
        g.refused = true;
        sluice_buf *m = &g.refusal;
        m->len = 0;
        sluice_buf_append_str(m, "sluice: state access outside the operation's declaration: read index ");
        sluice_buf_append_u64(m, i);
        sluice_buf_append_str(m, " of ");
        sluice_buf_append_u64(m, c->read_count);
        sluice_buf_append_str(m, " declared reads");
    }
    sluice_value v = {false, {NULL, 0}};
    return v;
}

uint8_t *sluice_call_scratch(sluice_call *c, size_t n) {
    must_apply(c, "sluice_call_scratch");
    g.scratch.len = 0;
    return sluice_buf_reserve(&g.scratch, n > 0 ? n : 1);
}

int sluice_txn_get(sluice_call *c, uint32_t table, sluice_bytes key, sluice_buf *value) {
    must_apply(c, "sluice_txn_get");
    for (int attempt = 0;; attempt++) {
        int32_t n = sluice_host_txn_get((int32_t)table, key.ptr, (uint32_t)key.len, value->ptr, (uint32_t)value->cap);
        if (n == SLUICE_STATUS_NOT_FOUND) {
            value->len = 0;
            return 0;
        }
        if (n == SLUICE_STATUS_UNDECLARED) {
            value->len = 0;
            refuse("get", table, key);
            return SLUICE_STATUS_UNDECLARED;
        }
        if (n < 0) sluice_panic("txn_get returned an unknown status");
        if ((size_t)n <= value->cap) {
            value->len = (size_t)n;
            return 1;
        }
        if (attempt > 0) sluice_panic("txn_get reported a larger value after a retry");
        value->len = 0;
        sluice_buf_reserve(value, (size_t)n + (size_t)n / 4);
    }
}

static int txn_status(int32_t st, const char *what, uint32_t table, sluice_bytes key) {
    if (st == SLUICE_STATUS_OK) return SLUICE_STATUS_OK;
    if (st == SLUICE_STATUS_UNDECLARED) {
        refuse(what, table, key);
        return SLUICE_STATUS_UNDECLARED;
    }
    sluice_panic("txn_put or txn_delete returned an unknown status");
}

int sluice_txn_put(sluice_call *c, uint32_t table, sluice_bytes key, sluice_bytes value) {
    must_apply(c, "sluice_txn_put");
    int32_t st =
        sluice_host_txn_put((int32_t)table, key.ptr, (uint32_t)key.len, value.ptr, (uint32_t)value.len);
    return txn_status(st, "put", table, key);
}

int sluice_txn_delete(sluice_call *c, uint32_t table, sluice_bytes key) {
    must_apply(c, "sluice_txn_delete");
    return txn_status(sluice_host_txn_delete((int32_t)table, key.ptr, (uint32_t)key.len), "delete", table, key);
}

/* apply_failed logs why the operation failed and returns StatusError. */
static int32_t apply_failed(const sluice_effect *e) {
    sluice_call *c = &g.call;
    sluice_buf *m = msg_start("apply: event ");
    sluice_buf_append_u64(m, c->event);
    sluice_buf_append_str(m, " operation ");
    sluice_buf_append_u64(m, c->op);
    sluice_buf_append_str(m, ": function ");
    sluice_buf_append_u64(m, c->fn);
    sluice_buf_append_str(m, " failed: ");
    if (e->code == EFFECT_FAIL) {
        sluice_bytes t = error_text(EFFECT_FAIL);
        sluice_buf_append(m, t.ptr, t.len);
    } else if (g.refused) {
        sluice_buf_append(m, g.refusal.ptr, g.refusal.len);
    } else if (e->len > INT32_MAX) {
        sluice_buf_append_str(m, "sluice: write of a value over the ABI's limit of 2147483647 bytes");
    } else {
        sluice_buf_append_str(m, "the function returned the unknown effect code ");
        sluice_buf_append_i64(m, e->code);
        sluice_buf_append_str(m, " (build effects with sluice_write, sluice_keep, sluice_delete, sluice_abort or "
                                 "sluice_fail)");
    }
    log_error_msg();
    return SLUICE_STATUS_ERROR;
}

SLUICE_EXPORT("sluice_apply") int32_t sluice_apply(uint8_t *req, uint32_t len) {
    /* Regions stay valid until the next alloc: the host may write the
     * next request into this one without asking. */
    g.pending = false;
    if (!usable("sluice_apply", true)) return SLUICE_STATUS_ERROR;
    reader r = new_reader(req, len);
    if (!decode_apply(&r)) {
        reader_error(msg_start("apply: "), &r, "apply request");
        log_error_msg();
        return SLUICE_STATUS_ERROR;
    }
    sluice_call *c = &g.call;
    if (c->fn >= g.op->func_count) {
        sluice_buf *m = msg_start("apply: event ");
        sluice_buf_append_u64(m, c->event);
        sluice_buf_append_str(m, " operation ");
        sluice_buf_append_u64(m, c->op);
        sluice_buf_append_str(m, " names function ");
        sluice_buf_append_u64(m, c->fn);
        sluice_buf_append_str(m, ", but the operator has ");
        sluice_buf_append_u64(m, g.op->func_count);
        sluice_buf_append_str(m, " functions (funcs)");
        log_error_msg();
        return SLUICE_STATUS_ERROR;
    }
    g.refused = false;
    clear_error();
    g.phase = PHASE_APPLY;
    sluice_effect e = g.op->funcs[c->fn](c);
    g.phase = PHASE_IDLE;
    if (g.refused || e.code < 0 || e.code > 3 || e.len > INT32_MAX) return apply_failed(&e);
    /* The result slot is written whatever the code: the host reads it
     * only after a write. */
    st32(req, (uint32_t)(uintptr_t)e.ptr);
    st32(req + 4, (uint32_t)e.len);
#if !defined(__wasm__)
    g.written = e.ptr;
    g.written_len = e.len;
#endif
    return e.code;
}

/* ---------------------------------------------------------------------- */
/* Transactional operators: post. */

static int32_t post_batch(uint8_t *events, size_t len, uint8_t *outcomes, size_t olen) {
    if (!usable("sluice_post", true)) return SLUICE_STATUS_ERROR;
    if (g.op->post == NULL) return SLUICE_STATUS_OK; /* nothing to emit */
    if (len < 4) {
        batch_error("input batch", events, len);
        return SLUICE_STATUS_ERROR;
    }
    uint32_t count = ld32(events);
    reader r = new_reader(outcomes, olen);
    size_t n = rcount(&r, "event count", 8);
    if (r.fail != FAIL_NONE) {
        reader_error(msg_start("post: "), &r, "outcomes");
        log_error_msg();
        return SLUICE_STATUS_ERROR;
    }
    if (n != count) {
        sluice_buf *m = msg_start("post: outcomes of ");
        sluice_buf_append_u64(m, n);
        sluice_buf_append_str(m, " events for a batch of ");
        sluice_buf_append_u64(m, count);
        log_error_msg();
        return SLUICE_STATUS_ERROR;
    }
    out_start();
    size_t off = 4;
    bool events_bad = false;
    for (uint32_t i = 0; i < count; i++) {
        size_t next = decode_record(events, len, off, &g.rec);
        if (next == 0) {
            events_bad = true;
            break;
        }
        off = next;
        sluice_outcome o;
        if (!decode_outcome(&r, &o)) break;
        struct emitting e = begin_emitting(i);
        int rc = g.op->post(&g.rec, &o);
        if (!end_emitting(e, rc)) reject(i, rc);
    }
    if (events_bad || (r.fail == FAIL_NONE && off != len)) {
        batch_error("input batch", events, len);
        return SLUICE_STATUS_ERROR;
    }
    rend(&r);
    if (r.fail != FAIL_NONE) {
        reader_error(msg_start("post: "), &r, "outcomes");
        log_error_msg();
        return SLUICE_STATUS_ERROR;
    }
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_post")
int32_t sluice_post(uint8_t *events, uint32_t events_len, uint8_t *outcomes, uint32_t outcomes_len) {
    int32_t status = post_batch(events, events_len, outcomes, outcomes_len);
    consumed();
    return status;
}

/* ---------------------------------------------------------------------- */
/* Window functions (ABI.md section 13). */

/* window_usable returns true when the operator is of kind want; otherwise
 * it logs why and returns false. It serves the join export too. */
static bool window_usable(const char *export, enum kind want) {
    enum kind k = check_operator();
    if (k == KIND_INVALID) {
        log_buf(SLUICE_LOG_ERROR, &g.kind_err);
        return false;
    }
    if (k == want) return true;
    sluice_buf *m = msg_start(export);
    sluice_buf_append_str(m, " called, but this operator's SLUICE_OPERATOR sets ");
    sluice_buf_append_str(m, kind_name(k));
    sluice_buf_append_str(m, ", not ");
    sluice_buf_append_str(m, kind_name(want));
    log_error_msg();
    return false;
}

/* malformed logs that the input of export is malformed. */
static int32_t malformed(const char *export) {
    msg_start(export);
    sluice_buf_append_str(&g.msg, ": malformed input");
    log_error_msg();
    return SLUICE_STATUS_ERROR;
}

/* read_count reads a u32 count at b[*off:len), or returns false. */
static bool read_count(const uint8_t *b, size_t len, size_t *off, uint32_t *n) {
    if (len - *off < 4) return false;
    *n = ld32(b + *off);
    *off += 4;
    return true;
}

/* emit_acc emits the accumulator in g.acc with origin. */
static void emit_acc(uint32_t origin) {
    sluice_record r = {0};
    r.value = sluice_buf_bytes(&g.acc);
    append_record(&g.out, origin, &r);
    g.out_count++;
    if (g.out.len >= FLUSH_SIZE) flush();
}

/* window_of reads a firing's window from its headers. */
static bool window_of(const sluice_record *r, sluice_window *w) {
    bool start = false, end = false, firing = false;
    for (size_t i = 0; i < r->header_count; i++) {
        sluice_bytes n = r->headers[i].name, v = r->headers[i].value;
        if (n.len == 19 && memcmp(n.ptr, "sluice-window-start", 19) == 0 && v.len == 8) {
            w->start = (int64_t)ld64(v.ptr);
            start = true;
        } else if (n.len == 17 && memcmp(n.ptr, "sluice-window-end", 17) == 0 && v.len == 8) {
            w->end = (int64_t)ld64(v.ptr);
            end = true;
        } else if (n.len == 13 && memcmp(n.ptr, "sluice-firing", 13) == 0) {
            firing = true;
            if (v.len == 7 && memcmp(v.ptr, "on-time", 7) == 0) w->firing = SLUICE_ON_TIME;
            else if (v.len == 5 && memcmp(v.ptr, "early", 5) == 0) w->firing = SLUICE_EARLY;
            else if (v.len == 4 && memcmp(v.ptr, "late", 4) == 0) w->firing = SLUICE_LATE;
            else firing = false;
        }
    }
    return start && end && firing;
}

static int32_t agg_add_batch(uint8_t *b, size_t len) {
    static const char export[] = "sluice_agg_add";
    if (!window_usable(export, KIND_AGG)) return SLUICE_STATUS_ERROR;
    size_t off = 0;
    uint32_t groups, member = 0;
    if (!read_count(b, len, &off, &groups)) return malformed(export);
    out_start();
    for (uint32_t gi = 0; gi < groups; gi++) {
        if ((off = decode_record(b, len, off, &g.rec)) == 0) return malformed(export);
        g.acc.len = 0;
        sluice_buf_append(&g.acc, g.rec.value.ptr, g.rec.value.len);
        uint32_t n;
        if (!read_count(b, len, &off, &n)) return malformed(export);
        for (uint32_t k = 0; k < n; k++, member++) {
            if ((off = decode_record(b, len, off, &g.rec)) == 0) return malformed(export);
            clear_error();
            g.phase = PHASE_RECORD;
            int rc = g.op->agg_add(&g.acc, &g.rec);
            g.phase = PHASE_IDLE;
            if (rc != SLUICE_OK) {
                reject(member, rc);
            } else if (g.acc.len == 0) {
                sluice_buf *m = msg_start(export);
                sluice_buf_append_str(m, ": agg_add left an empty accumulator for record ");
                sluice_buf_append_u64(m, member);
                sluice_buf_append_str(m, ": an accumulator takes at least one byte");
                log_error_msg();
                return SLUICE_STATUS_ERROR;
            }
        }
        emit_acc(gi);
    }
    if (off != len) return malformed(export);
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_agg_add") int32_t sluice_agg_add(uint8_t *groups, uint32_t len) {
    int32_t status = agg_add_batch(groups, len);
    consumed();
    return status;
}

static int32_t agg_merge_batch(uint8_t *b, size_t len) {
    static const char export[] = "sluice_agg_merge";
    if (!window_usable(export, KIND_AGG)) return SLUICE_STATUS_ERROR;
    size_t off = 0;
    uint32_t n;
    if (!read_count(b, len, &off, &n) || n % 2 != 0) return malformed(export);
    out_start();
    for (uint32_t j = 0; j < n / 2; j++) {
        if ((off = decode_record(b, len, off, &g.rec)) == 0) return malformed(export);
        g.acc.len = 0;
        sluice_buf_append(&g.acc, g.rec.value.ptr, g.rec.value.len);
        if ((off = decode_record(b, len, off, &g.rec)) == 0) return malformed(export);
        clear_error();
        g.phase = PHASE_RECORD;
        int rc = g.op->agg_merge(&g.acc, g.rec.value);
        g.phase = PHASE_IDLE;
        if (rc != SLUICE_OK || g.acc.len == 0) {
            sluice_buf *m = msg_start(export);
            sluice_buf_append_str(m, ": pair ");
            sluice_buf_append_u64(m, j);
            sluice_buf_append_str(m, ": ");
            if (rc != SLUICE_OK) {
                sluice_bytes t = error_text(rc);
                sluice_buf_append(m, t.ptr, t.len);
            } else {
                sluice_buf_append_str(m, "agg_merge left an empty accumulator");
            }
            log_error_msg();
            return SLUICE_STATUS_ERROR;
        }
        emit_acc(j);
    }
    if (off != len) return malformed(export);
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_agg_merge") int32_t sluice_agg_merge(uint8_t *pairs, uint32_t len) {
    int32_t status = agg_merge_batch(pairs, len);
    consumed();
    return status;
}

static int32_t agg_fire_batch(uint8_t *b, size_t len) {
    static const char export[] = "sluice_agg_fire";
    if (!window_usable(export, KIND_AGG)) return SLUICE_STATUS_ERROR;
    size_t off = 0;
    uint32_t n;
    if (!read_count(b, len, &off, &n)) return malformed(export);
    out_start();
    for (uint32_t j = 0; j < n; j++) {
        if ((off = decode_record(b, len, off, &g.rec)) == 0) return malformed(export);
        sluice_window w = {0};
        if (!window_of(&g.rec, &w)) return malformed(export);
        struct emitting e = begin_emitting(j);
        int rc = g.op->agg_fire(g.rec.key, &w, g.rec.value);
        if (!end_emitting(e, rc)) reject(j, rc);
    }
    if (off != len) return malformed(export);
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_agg_fire") int32_t sluice_agg_fire(uint8_t *fires, uint32_t len) {
    int32_t status = agg_fire_batch(fires, len);
    consumed();
    return status;
}

static int32_t window_fire_batch(uint8_t *b, size_t len) {
    static const char export[] = "sluice_window_fire";
    if (!window_usable(export, KIND_WINDOW)) return SLUICE_STATUS_ERROR;
    size_t off = 0;
    uint32_t groups, member = 0;
    if (!read_count(b, len, &off, &groups)) return malformed(export);
    out_start();
    for (uint32_t gi = 0; gi < groups; gi++) {
        sluice_record head;
        sluice_window w = {0};
        if ((off = decode_record(b, len, off, &head)) == 0 || !window_of(&head, &w)) return malformed(export);
        uint32_t n;
        if (!read_count(b, len, &off, &n) || n > (len - off) / RECORD_MIN) return malformed(export);
        /* Two passes: the first checks the records and counts their
         * headers, the second keeps each record's headers apart (decoding
         * reuses g.hdrs). */
        size_t first = off, nh = 0;
        for (uint32_t k = 0; k < n; k++) {
            if ((off = decode_record(b, len, off, &g.rec)) == 0) return malformed(export);
            nh += g.rec.header_count;
        }
        g.members = grow(g.members, &g.members_cap, n, sizeof *g.members);
        g.mhdrs = grow(g.mhdrs, &g.mhdrs_cap, nh, sizeof *g.mhdrs);
        off = first;
        nh = 0;
        for (uint32_t k = 0; k < n; k++) {
            sluice_record *m = &g.members[k];
            off = decode_record(b, len, off, m);
            if (m->header_count > 0) {
                memcpy(g.mhdrs + nh, m->headers, m->header_count * sizeof *g.mhdrs);
                m->headers = g.mhdrs + nh;
                nh += m->header_count;
            }
        }
        struct emitting e = begin_emitting(gi);
        int rc = g.op->window_fire(head.key, &w, g.members, n);
        if (!end_emitting(e, rc))
            for (uint32_t k = 0; k < n; k++) reject(member + k, rc);
        member += n;
    }
    if (off != len) return malformed(export);
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_window_fire") int32_t sluice_window_fire(uint8_t *groups, uint32_t len) {
    int32_t status = window_fire_batch(groups, len);
    consumed();
    return status;
}

/* ---------------------------------------------------------------------- */
/* Join functions (ABI.md section 14). */

/* The bits of a join pair's head value: which sides the pair has. */
enum { JOIN_LEFT = 1, JOIN_RIGHT = 2 };

/* pair_error logs what is wrong with pair j of sluice_join's input. */
static int32_t pair_error(uint32_t j, const char *what) {
    sluice_buf *m = msg_start("sluice_join: pair ");
    sluice_buf_append_u64(m, j);
    sluice_buf_append_str(m, what);
    log_error_msg();
    return SLUICE_STATUS_ERROR;
}

static int32_t join_batch(uint8_t *b, size_t len) {
    static const char export[] = "sluice_join";
    if (!window_usable(export, KIND_JOIN)) return SLUICE_STATUS_ERROR;
    size_t off = 0;
    uint32_t pairs;
    if (!read_count(b, len, &off, &pairs)) return malformed(export);
    out_start();
    for (uint32_t j = 0; j < pairs; j++) {
        sluice_record head;
        if ((off = decode_record(b, len, off, &head)) == 0) return malformed(export);
        /* A window join's heads carry the window; an interval join's
         * carry no header. */
        sluice_window win = {0};
        const sluice_window *w = NULL;
        if (head.header_count > 0) {
            if (!window_of(&head, &win)) return pair_error(j, " has headers that are not a window's");
            w = &win;
        }
        uint8_t sides = head.value.len == 1 ? head.value.ptr[0] : 0;
        if (sides == 0 || (sides & ~(JOIN_LEFT | JOIN_RIGHT)) != 0)
            return pair_error(j, ": the head's value is not one byte of sides");
        uint32_t n, want = (sides & JOIN_LEFT ? 1 : 0) + (sides & JOIN_RIGHT ? 1 : 0);
        if (!read_count(b, len, &off, &n)) return malformed(export);
        if (n != want) {
            sluice_buf *m = msg_start("sluice_join: pair ");
            sluice_buf_append_u64(m, j);
            sluice_buf_append_str(m, " has ");
            sluice_buf_append_u64(m, n);
            sluice_buf_append_str(m, " records, and its head says ");
            sluice_buf_append_u64(m, want);
            log_error_msg();
            return SLUICE_STATUS_ERROR;
        }
        /* Decoding reuses g.hdrs: the first member's headers move to
         * g.mhdrs before the second is decoded, which keeps its own. */
        sluice_record recs[2];
        for (uint32_t k = 0; k < n; k++) {
            if ((off = decode_record(b, len, off, &recs[k])) == 0) return malformed(export);
            if (k + 1 < n && recs[k].header_count > 0) {
                g.mhdrs = grow(g.mhdrs, &g.mhdrs_cap, recs[k].header_count, sizeof *g.mhdrs);
                memcpy(g.mhdrs, recs[k].headers, recs[k].header_count * sizeof *g.mhdrs);
                recs[k].headers = g.mhdrs;
            }
        }
        const sluice_record *left = sides & JOIN_LEFT ? &recs[0] : NULL;
        const sluice_record *right = sides & JOIN_RIGHT ? &recs[n - 1] : NULL;
        struct emitting e = begin_emitting(j);
        int rc = g.op->join(head.key, w, left, right);
        if (!end_emitting(e, rc)) reject(j, rc);
    }
    if (off != len) return malformed(export);
    out_end();
    return SLUICE_STATUS_OK;
}

SLUICE_EXPORT("sluice_join") int32_t sluice_join(uint8_t *groups, uint32_t len) {
    int32_t status = join_batch(groups, len);
    consumed();
    return status;
}
