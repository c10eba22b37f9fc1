/*
 * Native tests of the C SDK's guest core: sluice.c compiled for the build
 * machine with -DSLUICE_NATIVE_TEST, its exports called as the host calls
 * them, its host functions played by the fake host below. The fake host
 * decodes and encodes with code of its own, written from ABI.md rather
 * than shared with sluice.c, and the ABI.md examples are checked byte for
 * byte. Run from the repository root:
 *
 *     clang -std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined \
 *         -DSLUICE_NATIVE_TEST -I sdk/c -o /tmp/sluice_c_test \
 *         sdk/c/test/sluice_test.c sdk/c/sluice.c && /tmp/sluice_c_test
 */
#define _POSIX_C_SOURCE 200809L
#include "sluice.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, __func__, \
                    #cond);                                                                \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* ---------------------------------------------------------------------- */
/* Test encodings, from ABI.md. */

typedef struct tbuf {
    uint8_t *p;
    size_t n, cap;
} tbuf;

static void put(tbuf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put32(tbuf *b, uint32_t v) {
    uint8_t d[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, d, 4);
}

static void put64(tbuf *b, uint64_t v) {
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}

static void putf(tbuf *b, const char *s) {
    put32(b, (uint32_t)strlen(s));
    put(b, s, strlen(s));
}

static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* A test record: strings, one optional header. */
typedef struct trec {
    const char *key, *value;
    int64_t time;
    const char *hname, *hvalue; /* NULL: no header */
} trec;

static void put_record(tbuf *b, uint32_t origin, const trec *r) {
    size_t size = 28 + strlen(r->key) + strlen(r->value);
    if (r->hname) size += 8 + strlen(r->hname) + strlen(r->hvalue);
    put32(b, (uint32_t)size);
    put32(b, origin);
    put32(b, 0);
    put64(b, (uint64_t)r->time);
    putf(b, r->key);
    putf(b, r->value);
    put32(b, r->hname ? 1 : 0);
    if (r->hname) {
        putf(b, r->hname);
        putf(b, r->hvalue);
    }
}

static tbuf batch_of(const trec *rs, size_t n) {
    tbuf b = {0};
    put32(&b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) put_record(&b, (uint32_t)i, &rs[i]);
    return b;
}

/* ---------------------------------------------------------------------- */
/* The fake host. */

typedef struct out_rec {
    uint32_t origin;
    char key[64], value[256];
    int64_t time;
    int headers;
    char hname[32], hvalue[32];
} out_rec;

static struct {
    out_rec outs[4096];
    size_t nouts;
    int emits;
    const uint8_t *last_emit;
    uint32_t rejects[64];
    char reject_msg[64][256];
    size_t nrejects;
    char last_log[1024];
    int nlogs;
    /* keyed state: one table of string keys */
    char skeys[64][32];
    tbuf svals[64];
    size_t nstate;
    tbuf plan; /* what txn_plan received */
    int undeclared; /* txn_get/put/delete answer StatusUndeclared */
    tbuf txn_value;  /* txn_get's value */
    int txn_found;
    char txn_put_key[32], txn_put_value[32];
} host;

static void host_reset(void) {
    for (size_t i = 0; i < host.nstate; i++) free(host.svals[i].p);
    free(host.plan.p);
    free(host.txn_value.p);
    memset(&host, 0, sizeof host);
}

static void copy_str(char *dst, size_t cap, const uint8_t *p, uint32_t n) {
    if (n >= cap) n = (uint32_t)cap - 1;
    memcpy(dst, p, n);
    dst[n] = 0;
}

void sluice_host_emit(const void *batch, uint32_t len) {
    const uint8_t *b = batch;
    host.emits++;
    host.last_emit = b;
    CHECK(len >= 4);
    uint32_t count = get32(b);
    size_t off = 4;
    for (uint32_t i = 0; i < count; i++) {
        out_rec *o = &host.outs[host.nouts++];
        const uint8_t *p = b + off;
        uint32_t size = get32(p);
        CHECK(off + 4 + size <= len);
        o->origin = get32(p + 4);
        CHECK(get32(p + 8) <= SLUICE_FLAGS_INPUT); /* a forwarded record keeps its input */
        o->time = (int64_t)((uint64_t)get32(p + 12) | (uint64_t)get32(p + 16) << 32);
        uint32_t kl = get32(p + 20);
        copy_str(o->key, sizeof o->key, p + 24, kl);
        uint32_t vl = get32(p + 24 + kl);
        copy_str(o->value, sizeof o->value, p + 28 + kl, vl);
        o->headers = (int)get32(p + 28 + kl + vl);
        const uint8_t *h = p + 32 + kl + vl;
        if (o->headers > 0) {
            uint32_t nl = get32(h);
            copy_str(o->hname, sizeof o->hname, h + 4, nl);
            uint32_t hl = get32(h + 4 + nl);
            copy_str(o->hvalue, sizeof o->hvalue, h + 8 + nl, hl);
        }
        off += 4 + size;
    }
    CHECK(off == len);
}

void sluice_host_reject(uint32_t origin, const void *msg, uint32_t len) {
    host.rejects[host.nrejects] = origin;
    copy_str(host.reject_msg[host.nrejects], sizeof host.reject_msg[0], msg, len);
    host.nrejects++;
}

int32_t sluice_host_table_id(const void *name, uint32_t len) {
    if (len == 6 && memcmp(name, "counts", 6) == 0) return 0;
    if (len == 5 && memcmp(name, "other", 5) == 0) return 1;
    return SLUICE_STATUS_NOT_FOUND;
}

static int state_find(const void *key, uint32_t len) {
    for (size_t i = 0; i < host.nstate; i++)
        if (strlen(host.skeys[i]) == len && memcmp(host.skeys[i], key, len) == 0) return (int)i;
    return -1;
}

int32_t sluice_host_state_get(int32_t table, const void *key, uint32_t key_len, void *buf, uint32_t buf_cap) {
    CHECK(table == 0);
    int i = state_find(key, key_len);
    if (i < 0) return SLUICE_STATUS_NOT_FOUND;
    tbuf *v = &host.svals[i];
    if (v->n <= buf_cap && v->n > 0) memcpy(buf, v->p, v->n);
    return (int32_t)v->n;
}

void sluice_host_state_put(int32_t table, const void *key, uint32_t key_len, const void *val, uint32_t val_len) {
    CHECK(table == 0);
    int i = state_find(key, key_len);
    if (i < 0) {
        i = (int)host.nstate++;
        copy_str(host.skeys[i], sizeof host.skeys[i], key, key_len);
    }
    host.svals[i].n = 0;
    put(&host.svals[i], val, val_len);
}

void sluice_host_state_delete(int32_t table, const void *key, uint32_t key_len) {
    (void)table, (void)key, (void)key_len;
    CHECK(0);
}

void sluice_host_log(int32_t level, const void *msg, uint32_t len) {
    (void)level;
    copy_str(host.last_log, sizeof host.last_log, msg, len);
    host.nlogs++;
}

void sluice_host_txn_plan(const void *decls, uint32_t len) { put(&host.plan, decls, len); }

int32_t sluice_host_txn_get(int32_t table, const void *key, uint32_t key_len, void *buf, uint32_t buf_cap) {
    (void)table, (void)key, (void)key_len;
    if (host.undeclared) return SLUICE_STATUS_UNDECLARED;
    if (!host.txn_found) return SLUICE_STATUS_NOT_FOUND;
    if (host.txn_value.n <= buf_cap && host.txn_value.n > 0) memcpy(buf, host.txn_value.p, host.txn_value.n);
    return (int32_t)host.txn_value.n;
}

int32_t sluice_host_txn_put(int32_t table, const void *key, uint32_t key_len, const void *val, uint32_t val_len) {
    (void)table;
    if (host.undeclared) return SLUICE_STATUS_UNDECLARED;
    copy_str(host.txn_put_key, sizeof host.txn_put_key, key, key_len);
    copy_str(host.txn_put_value, sizeof host.txn_put_value, val, val_len);
    return SLUICE_STATUS_OK;
}

int32_t sluice_host_txn_delete(int32_t table, const void *key, uint32_t key_len) {
    (void)table, (void)key, (void)key_len;
    return host.undeclared ? SLUICE_STATUS_UNDECLARED : SLUICE_STATUS_OK;
}

/* call runs an export over data as the host does: alloc, copy, call. */
static int32_t call_process(const tbuf *b) {
    uint8_t *in = sluice_alloc((int32_t)b->n);
    CHECK(in != NULL);
    memcpy(in, b->p, b->n);
    return sluice_process(in, (uint32_t)b->n);
}

static int32_t call_configure(const char *config) {
    size_t n = strlen(config);
    uint8_t *in = sluice_alloc((int32_t)n);
    memcpy(in, config, n);
    return sluice_configure(in, (uint32_t)n);
}

static void use(const sluice_operator *op) {
    host_reset();
    sluice_test_use(op);
}

/* ---------------------------------------------------------------------- */
/* Record codec and the map and filter paths. */

static int identity(sluice_record *r) {
    (void)r;
    return SLUICE_OK;
}

static int upper_in_place(sluice_record *r) {
    for (size_t i = 0; i < r->value.len; i++)
        if (r->value.ptr[i] >= 'a' && r->value.ptr[i] <= 'z') r->value.ptr[i] -= 32;
    return SLUICE_OK;
}

/* Replaces values starting with "x", rejects values "bad", keeps others. */
static int mixed_map(sluice_record *r) {
    static const char repl[] = "replaced";
    if (sluice_bytes_equal(r->value, SLUICE_LIT("bad"))) return sluice_error("bad value");
    if (r->value.len > 0 && r->value.ptr[0] == 'x') r->value = sluice_bytes_of(repl, sizeof repl - 1);
    return SLUICE_OK;
}

static void test_abi_example(void) {
    /* ABI.md section 4's example, byte for byte. */
    static const uint8_t example[49] = {0x01, 0, 0, 0, 0x29, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x2a,
                                        0x36, 0xfe, 0x9c, 0x97, 0x17, 1, 0, 0, 0, 'k', 2, 0, 0, 0, 'v', '1', 1, 0,
                                        0, 0, 1, 0, 0, 0, 'h', 1, 0, 0, 0, 'x'};
    trec r = {"k", "v1", 1700000000000000000LL, "h", "x"};
    tbuf b = batch_of(&r, 1);
    CHECK(b.n == sizeof example && memcmp(b.p, example, b.n) == 0);

    /* An identity map forwards the batch where it lies. */
    static const sluice_operator op = {.map = identity};
    use(&op);
    uint8_t *in = sluice_alloc((int32_t)b.n);
    memcpy(in, b.p, b.n);
    CHECK(sluice_process(in, (uint32_t)b.n) == SLUICE_STATUS_OK);
    CHECK(host.emits == 1 && host.last_emit == in && host.nouts == 1);
    out_rec *o = &host.outs[0];
    CHECK(strcmp(o->key, "k") == 0 && strcmp(o->value, "v1") == 0 && o->time == 1700000000000000000LL);
    CHECK(o->headers == 1 && strcmp(o->hname, "h") == 0 && strcmp(o->hvalue, "x") == 0);
    free(b.p);
}

static void test_map(void) {
    trec rs[] = {{"a", "one", 1, NULL, NULL}, {"b", "xtwo", 2, "h", "v"}, {"c", "bad", 3, NULL, NULL},
                 {"d", "four", 4, NULL, NULL}, {"e", "xfive", 5, NULL, NULL}};
    tbuf b = batch_of(rs, 5);
    static const sluice_operator op = {.map = mixed_map};
    use(&op);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    CHECK(host.emits == 1 && host.nouts == 4);
    const char *want[] = {"one", "replaced", "four", "replaced"};
    const uint32_t origins[] = {0, 1, 3, 4};
    for (int i = 0; i < 4; i++) CHECK(strcmp(host.outs[i].value, want[i]) == 0 && host.outs[i].origin == origins[i]);
    CHECK(host.outs[1].headers == 1 && strcmp(host.outs[1].hvalue, "v") == 0 && host.outs[1].time == 2);
    CHECK(host.nrejects == 1 && host.rejects[0] == 2 && strcmp(host.reject_msg[0], "bad value") == 0);

    /* In place: forwarded, with the bytes changed. */
    static const sluice_operator up = {.map = upper_in_place};
    use(&up);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 5 && strcmp(host.outs[1].value, "XTWO") == 0 && strcmp(host.outs[1].key, "b") == 0);
    free(b.p);
}

static int keep_odd_time(const sluice_record *r, bool *keep) {
    *keep = r->time % 2 == 1;
    return r->time == 7 ? sluice_error("seven") : SLUICE_OK;
}

static void test_filter(void) {
    trec rs[8];
    for (int i = 0; i < 8; i++) rs[i] = (trec){"k", "v", i, NULL, NULL};
    tbuf b = batch_of(rs, 8);
    static const sluice_operator op = {.filter = keep_odd_time};
    use(&op);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 3);
    for (int i = 0; i < 3; i++) CHECK(host.outs[i].origin == (uint32_t)(2 * i + 1) && host.outs[i].time == 2 * i + 1);
    CHECK(host.nrejects == 1 && host.rejects[0] == 7);
    free(b.p);
}

static void test_malformed(void) {
    static const sluice_operator op = {.map = identity};
    trec r = {"key", "value", 9, "n", "v"};
    tbuf good = batch_of(&r, 1); /* 54 bytes: key length at 24, value length at 31, header count at 40 */
    struct {
        const char *name;
        size_t at, len; /* overwrite 4 bytes at at with v (when len == 0), or cut to len */
        uint32_t v;
    } cases[] = {
        {"count over the bytes", 0, 0, 2},
        {"size under 28", 4, 0, 27},
        {"size past the end", 4, 0, 100},
        {"flags beside the input", 14, 0, 1},
        {"key past the record", 24, 0, 40},
        {"value past the record", 31, 0, 40},
        {"header count that cannot fit", 40, 0, 2},
        {"header name past the record", 44, 0, 9},
        {"header value past the record", 49, 0, 9},
        {"truncated", 0, 20, 0},
        {"shorter than the count", 0, 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tbuf b = {0};
        put(&b, good.p, good.n);
        if (cases[i].len) b.n = cases[i].len;
        else {
            b.p[cases[i].at] = (uint8_t)cases[i].v;
            b.p[cases[i].at + 1] = b.p[cases[i].at + 2] = b.p[cases[i].at + 3] = 0;
        }
        use(&op);
        int32_t st = call_process(&b);
        if (st != SLUICE_STATUS_ERROR || strstr(host.last_log, "input batch") == NULL) {
            fprintf(stderr, "malformed batch %s: status %d, log %s\n", cases[i].name, st, host.last_log);
            failures++;
        }
        free(b.p);
    }
    /* Bytes after the last record, and after a record's headers. */
    tbuf b = {0};
    put(&b, good.p, good.n);
    put32(&b, 0);
    use(&op);
    CHECK(call_process(&b) == SLUICE_STATUS_ERROR);
    b.n = good.n;
    b.p[4] += 1; /* the record claims one byte more than its fields */
    put(&b, "z", 1);
    use(&op);
    CHECK(call_process(&b) == SLUICE_STATUS_ERROR);
    free(b.p);
    /* The good batch passes. */
    use(&op);
    CHECK(call_process(&good) == SLUICE_STATUS_OK && host.nouts == 1);
    free(good.p);
}

/* ---------------------------------------------------------------------- */
/* Flatmap, keyed, configuration and the operator definition. */

static int twice(const sluice_record *r) {
    sluice_record o = *r;
    sluice_emit(&o);
    o.value = SLUICE_LIT("second");
    o.headers = NULL;
    o.header_count = 0;
    sluice_emit(&o);
    if (sluice_bytes_equal(r->key, SLUICE_LIT("fail"))) {
        sluice_buf m = SLUICE_BUF_INIT;
        sluice_buf_append_str(&m, "key ");
        sluice_buf_append_quoted(&m, r->key.ptr, r->key.len);
        sluice_buf_append_str(&m, " at ");
        sluice_buf_append_i64(&m, r->time);
        int rc = sluice_error_bytes(m.ptr, m.len);
        sluice_buf_free(&m);
        return rc;
    }
    return SLUICE_OK;
}

/* Records the input of each record it sees, in order. */
static uint32_t seen_inputs[8];
static size_t nseen;

static int see_input(sluice_record *r) {
    if (nseen < 8) seen_inputs[nseen++] = r->input;
    return SLUICE_OK;
}

static int see_input_emit(const sluice_record *r) {
    if (nseen < 8) seen_inputs[nseen++] = r->input;
    sluice_record o = *r;
    o.input = 9; /* ignored: an output has no input */
    sluice_emit(&o);
    return SLUICE_OK;
}

/* The SDK declares SLUICE_FEATURE_INPUTS and hands callbacks each record's
 * input, the low 16 bits of its flags; other flag bits are refused. */
static void test_inputs(void) {
    CHECK(sluice_features() == SLUICE_FEATURE_INPUTS);
    trec rs[] = {{"a", "1", 1, NULL, NULL}, {"b", "2", 2, NULL, NULL}, {"c", "3", 3, "h", "v"}};
    tbuf b = batch_of(rs, 3);
    /* Inputs 1, 0 and 65535, in the records' flags. */
    size_t r1 = 4, r3 = r1 + 4 + get32(b.p + r1);
    r3 += 4 + get32(b.p + r3);
    b.p[r1 + 8] = 1;
    b.p[r3 + 8] = 0xff, b.p[r3 + 9] = 0xff;
    static const sluice_operator m = {.map = see_input};
    static const sluice_operator f = {.flatmap = see_input_emit};
    const sluice_operator *ops[] = {&m, &f};
    for (int i = 0; i < 2; i++) {
        use(ops[i]);
        nseen = 0;
        CHECK(call_process(&b) == SLUICE_STATUS_OK && host.nouts == 3);
        CHECK(nseen == 3 && seen_inputs[0] == 1 && seen_inputs[1] == 0 && seen_inputs[2] == 0xffff);
    }
    /* The flatmap's outputs were encoded with flags 0 (the fake host
     * checks that they are at most SLUICE_FLAGS_INPUT). */
    b.p[r1 + 10] = 1; /* flags 0x10001 */
    use(&m);
    CHECK(call_process(&b) == SLUICE_STATUS_ERROR && strstr(host.last_log, "input batch") != NULL);
    free(b.p);
}

static void test_flatmap(void) {
    trec rs[] = {{"a", "1", 1, "h", "v"}, {"fail", "2", -2, NULL, NULL}, {"c", "3", 3, NULL, NULL}};
    tbuf b = batch_of(rs, 3);
    static const sluice_operator op = {.flatmap = twice};
    use(&op);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 4 && host.emits == 1);
    CHECK(host.outs[0].origin == 0 && host.outs[0].headers == 1 && strcmp(host.outs[1].value, "second") == 0);
    CHECK(host.outs[2].origin == 2 && host.outs[3].origin == 2 && host.outs[3].headers == 0);
    CHECK(host.nrejects == 1 && host.rejects[0] == 1 && strcmp(host.reject_msg[0], "key \"fail\" at -2") == 0);
    free(b.p);
}

static int big(const sluice_record *r) {
    static uint8_t v[200 << 10];
    sluice_record o = *r;
    o.value = sluice_bytes_of(v, sizeof v);
    for (int i = 0; i < 3; i++) sluice_emit(&o);
    return r->time == 5 ? sluice_error("no") : SLUICE_OK;
}

static void test_flush(void) {
    trec rs[8];
    for (int i = 0; i < 8; i++) rs[i] = (trec){"k", "v", i, NULL, NULL};
    tbuf b = batch_of(rs, 8);
    static const sluice_operator op = {.flatmap = big};
    use(&op);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    /* 600 KiB per record: a flush after every second record, between
     * records, and the rejected record's outputs dropped. */
    CHECK(host.nouts == 21 && host.emits > 2);
    for (size_t i = 0; i < host.nouts; i++) CHECK(host.outs[i].origin != 5);
    free(b.p);
}

static int count(const sluice_record *r) {
    static sluice_buf v = SLUICE_BUF_INIT;
    uint64_t n = 0;
    if (sluice_state_get(sluice_table_id("counts"), r->key, &v)) {
        for (size_t i = 0; i < v.len; i++) n = n * 10 + (v.ptr[i] - '0');
    }
    v.len = 0;
    sluice_buf_append_u64(&v, n + 1);
    sluice_state_put(0, r->key, sluice_buf_bytes(&v));
    sluice_record o = {r->key, sluice_buf_bytes(&v), r->time, NULL, 0, 0};
    sluice_emit(&o);
    return SLUICE_OK;
}

static void test_keyed(void) {
    static const sluice_operator op = {.keyed = count};
    use(&op);
    trec rs[] = {{"the", "", 1, NULL, NULL}, {"cat", "", 2, NULL, NULL}, {"the", "", 3, NULL, NULL}};
    tbuf b = batch_of(rs, 3);
    CHECK(call_configure("") == SLUICE_STATUS_OK);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 3 && strcmp(host.outs[2].value, "2") == 0 && strcmp(host.outs[1].value, "1") == 0);
    /* A value larger than the buffer: the SDK grows it and asks again. */
    int i = state_find("the", 3);
    host.svals[i].n = 0;
    put(&host.svals[i], "000000000000000000000000000000000000041", 39);
    CHECK(call_process(&b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 6 && strcmp(host.outs[3].value, "42") == 0 && strcmp(host.outs[5].value, "43") == 0);
    free(b.p);
}

static const char *seen_config;
static int configure(const uint8_t *c, size_t n) {
    static char buf[64];
    copy_str(buf, sizeof buf, c, (uint32_t)n);
    seen_config = buf;
    return strstr(buf, "bad") ? sluice_errorf("config %s is %d times bad", "x", 3) : SLUICE_OK;
}

static void test_configure(void) {
    static const sluice_operator none = {.map = identity};
    const char *accepted[] = {"", "null", "{}", " \n{}\t", "\xc2\xa0null\xe2\x80\x80"};
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        use(&none);
        CHECK(call_configure(accepted[i]) == SLUICE_STATUS_OK);
    }
    use(&none);
    CHECK(call_configure("{\"a\":1}") == SLUICE_STATUS_BAD_CONFIG);
    CHECK(strstr(host.last_log, "takes no configuration") != NULL);

    static const sluice_operator with = {.map = identity, .configure = configure};
    use(&with);
    CHECK(call_configure("  ") == SLUICE_STATUS_OK && strcmp(seen_config, "null") == 0);
    CHECK(call_configure("{\"x\": 1}") == SLUICE_STATUS_OK && strcmp(seen_config, "{\"x\": 1}") == 0);
    CHECK(call_configure("\"bad\"") == SLUICE_STATUS_BAD_CONFIG);
    CHECK(strcmp(host.last_log, "invalid configuration: config x is 3 times bad") == 0);
}

static int plan_nothing(const sluice_record *e, sluice_planner *p) {
    (void)e, (void)p;
    return SLUICE_OK;
}

static sluice_effect keep_fn(sluice_call *c) {
    (void)c;
    return sluice_keep();
}

static void test_definitions(void) {
    static const sluice_txn_fn nulls[] = {keep_fn, NULL};
    struct {
        sluice_operator op;
        const char *want;
    } bad[] = {
        {{.map = identity, .flatmap = twice}, "sets both map and flatmap"},
        {{.configure = configure}, "sets no record callback"},
        {{.plan = plan_nothing}, "sets plan but no funcs"},
        {{.plan = plan_nothing, .funcs = nulls, .func_count = 2}, "funcs[1] is NULL"},
        {{.map = identity, SLUICE_FUNCS(keep_fn)}, "with map rather than plan"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        use(&bad[i].op);
        CHECK(sluice_kinds() == 0 && strstr(host.last_log, bad[i].want) != NULL);
        use(&bad[i].op);
        CHECK(call_configure("") == SLUICE_STATUS_BAD_CONFIG && strstr(host.last_log, bad[i].want) != NULL);
        tbuf b = batch_of(&(trec){"k", "v", 0, NULL, NULL}, 1);
        CHECK(call_process(&b) == SLUICE_STATUS_ERROR && strstr(host.last_log, bad[i].want) != NULL);
        free(b.p);
    }
    /* The wrong export for the kind. */
    static const sluice_operator m = {.map = identity};
    use(&m);
    tbuf b = batch_of(&(trec){"k", "v", 0, NULL, NULL}, 1);
    uint8_t *in = sluice_alloc((int32_t)b.n);
    memcpy(in, b.p, b.n);
    CHECK(sluice_plan(in, (uint32_t)b.n) == SLUICE_STATUS_ERROR && strstr(host.last_log, "not plan") != NULL);
    const sluice_operator t = {.plan = plan_nothing, SLUICE_FUNCS(keep_fn)};
    use(&t);
    CHECK(call_process(&b) == SLUICE_STATUS_ERROR && strstr(host.last_log, "transactional") != NULL);
    free(b.p);
}

/* sluice_kinds reports the kind SLUICE_OPERATOR gives, as its bit. */
static void test_kinds(void) {
    static const sluice_txn_fn fns[] = {keep_fn};
    struct {
        sluice_operator op;
        int32_t want;
    } cases[] = {
        {{.map = identity}, SLUICE_KIND_MAP},
        {{.filter = keep_odd_time}, SLUICE_KIND_FILTER},
        {{.flatmap = twice, .configure = configure}, SLUICE_KIND_FLATMAP},
        {{.keyed = count}, SLUICE_KIND_KEYED},
        {{.plan = plan_nothing, .funcs = fns, .func_count = 1}, SLUICE_KIND_TRANSACTIONAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        use(&cases[i].op);
        int nlogs = host.nlogs;
        CHECK(sluice_kinds() == cases[i].want && host.nlogs == nlogs);
    }
}

/* ---------------------------------------------------------------------- */
/* Window functions (ABI.md section 13). */

/* A count per key: one byte, refusing values "bad". */
static int count_add(sluice_buf *acc, const sluice_record *r) {
    if (r->value.len == 3 && memcmp(r->value.ptr, "bad", 3) == 0) return sluice_error("bad value");
    if (acc->len == 0) sluice_buf_append_byte(acc, 0);
    acc->ptr[0]++;
    return SLUICE_OK;
}
static int count_merge(sluice_buf *a, sluice_bytes b) {
    a->ptr[0] += b.ptr[0];
    return SLUICE_OK;
}
static int count_fire(sluice_bytes key, const sluice_window *w, sluice_bytes acc) {
    sluice_buf v = SLUICE_BUF_INIT;
    sluice_buf_append_u64(&v, acc.ptr[0]);
    sluice_buf_append_byte(&v, '@');
    sluice_buf_append_i64(&v, w->end);
    sluice_buf_append_byte(&v, w->firing == SLUICE_LATE ? 'L' : 'O');
    sluice_record o = {0};
    o.key = key;
    o.value = sluice_buf_bytes(&v);
    sluice_emit(&o);
    sluice_buf_free(&v);
    return SLUICE_OK;
}
/* Emits each record's header value and value, joined. */
static int concat_fire(sluice_bytes key, const sluice_window *w, const sluice_record *recs, size_t n) {
    (void)w;
    sluice_buf v = SLUICE_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].value.len == 3 && memcmp(recs[i].value.ptr, "bad", 3) == 0) {
            sluice_buf_free(&v);
            return sluice_error("bad window");
        }
        if (recs[i].header_count == 1) sluice_buf_append(&v, recs[i].headers[0].value.ptr, recs[i].headers[0].value.len);
        sluice_buf_append(&v, recs[i].value.ptr, recs[i].value.len);
    }
    sluice_record o = {0};
    o.key = key;
    o.value = sluice_buf_bytes(&v);
    sluice_emit(&o);
    sluice_buf_free(&v);
    return SLUICE_OK;
}

/* put_head puts a firing window's head: key, end - 1, the three headers. */
static void put_fire(tbuf *b, uint32_t origin, const char *key, int64_t start, int64_t end, const char *firing,
                     const char *value) {
    put32(b, (uint32_t)(28 + strlen(key) + strlen(value) + 3 * 8 + 19 + 17 + 13 + 16 + strlen(firing)));
    put32(b, origin);
    put32(b, 0);
    put64(b, (uint64_t)(end - 1));
    putf(b, key);
    putf(b, value);
    put32(b, 3);
    putf(b, "sluice-window-start");
    put32(b, 8);
    put64(b, (uint64_t)start);
    putf(b, "sluice-window-end");
    put32(b, 8);
    put64(b, (uint64_t)end);
    putf(b, "sluice-firing");
    putf(b, firing);
}

static int32_t call_export(int32_t (*fn)(uint8_t *, uint32_t), const tbuf *b) {
    uint8_t *in = sluice_alloc((int32_t)b->n);
    memcpy(in, b->p, b->n);
    return fn(in, (uint32_t)b->n);
}

static void test_window(void) {
    static const sluice_operator agg = {.agg_add = count_add, .agg_merge = count_merge, .agg_fire = count_fire};
    use(&agg);
    CHECK(sluice_kinds() == SLUICE_KIND_AGGREGATE);
    tbuf b = {0};
    put32(&b, 2);
    put_record(&b, 0, &(trec){"a", "", 0, NULL, NULL});
    put32(&b, 2);
    put_record(&b, 0, &(trec){"a", "x", 0, NULL, NULL});
    put_record(&b, 1, &(trec){"a", "bad", 0, NULL, NULL});
    put_record(&b, 1, &(trec){"b", "\x05", 0, NULL, NULL});
    put32(&b, 1);
    put_record(&b, 2, &(trec){"b", "y", 0, NULL, NULL});
    CHECK(call_export(sluice_agg_add, &b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 2 && host.outs[0].origin == 0 && host.outs[0].value[0] == 1 && host.outs[1].origin == 1 &&
          host.outs[1].value[0] == 6);
    CHECK(host.nrejects == 1 && host.rejects[0] == 1 && strcmp(host.reject_msg[0], "bad value") == 0);
    free(b.p);

    use(&agg);
    b = (tbuf){0};
    put32(&b, 2);
    put_record(&b, 0, &(trec){"a", "\x02", 0, NULL, NULL});
    put_record(&b, 1, &(trec){"a", "\x03", 0, NULL, NULL});
    CHECK(call_export(sluice_agg_merge, &b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 1 && host.outs[0].origin == 0 && host.outs[0].value[0] == 5);
    free(b.p);

    use(&agg);
    b = (tbuf){0};
    put32(&b, 1);
    put_fire(&b, 0, "k", 0, 60, "late", "\x04");
    CHECK(call_export(sluice_agg_fire, &b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 1 && strcmp(host.outs[0].key, "k") == 0 && strcmp(host.outs[0].value, "4@60L") == 0);
    CHECK(call_export(sluice_window_fire, &b) == SLUICE_STATUS_ERROR && strstr(host.last_log, "not window_fire") != NULL);
    free(b.p);

    static const sluice_operator win = {.window_fire = concat_fire};
    use(&win);
    CHECK(sluice_kinds() == SLUICE_KIND_WINDOW);
    b = (tbuf){0};
    put32(&b, 2);
    put_fire(&b, 0, "a", 0, 10, "on-time", "");
    put32(&b, 3);
    put_record(&b, 0, &(trec){"a", "1", 0, "h", "p"});
    put_record(&b, 1, &(trec){"a", "2", 0, NULL, NULL});
    put_record(&b, 2, &(trec){"a", "3", 0, "h", "q"});
    put_fire(&b, 1, "b", 0, 10, "early", "");
    put32(&b, 2);
    put_record(&b, 3, &(trec){"b", "bad", 0, NULL, NULL});
    put_record(&b, 4, &(trec){"b", "4", 0, NULL, NULL});
    CHECK(call_export(sluice_window_fire, &b) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 1 && host.outs[0].origin == 0 && strcmp(host.outs[0].value, "p12q3") == 0);
    CHECK(host.nrejects == 2 && host.rejects[0] == 3 && host.rejects[1] == 4);
    free(b.p);

    static const sluice_operator half = {.agg_add = count_add, .agg_fire = count_fire};
    use(&half);
    CHECK(sluice_kinds() == 0 && strstr(host.last_log, "agg_add, agg_merge and agg_fire, all three") != NULL);
}

/* ---------------------------------------------------------------------- */
/* Join functions (ABI.md section 14). */

/*
 * Emits one result per pair: the value "L|R", each side its header's value
 * (when it has one), its value and '@' and its input, "-" for a side the
 * pair lacks; for a window join a header "w" holding "start,end,firing".
 * A value "bad" on either side fails the pair after emitting, a right
 * value "twice" emits the result twice.
 */
static int pair_join(sluice_bytes key, const sluice_window *w, const sluice_record *left,
                     const sluice_record *right) {
    sluice_buf v = SLUICE_BUF_INIT, wv = SLUICE_BUF_INIT;
    const sluice_record *sides[2] = {left, right};
    bool bad = false;
    for (int i = 0; i < 2; i++) {
        const sluice_record *r = sides[i];
        if (i == 1) sluice_buf_append_byte(&v, '|');
        if (r == NULL) {
            sluice_buf_append_byte(&v, '-');
            continue;
        }
        if (r->header_count == 1) sluice_buf_append(&v, r->headers[0].value.ptr, r->headers[0].value.len);
        sluice_buf_append(&v, r->value.ptr, r->value.len);
        sluice_buf_append_byte(&v, '@');
        sluice_buf_append_u64(&v, r->input);
        bad = bad || sluice_bytes_equal(r->value, SLUICE_LIT("bad"));
    }
    sluice_record o = {0};
    o.key = key;
    o.value = sluice_buf_bytes(&v);
    sluice_header h = {SLUICE_LIT("w"), {NULL, 0}};
    if (w != NULL) {
        sluice_buf_append_i64(&wv, w->start);
        sluice_buf_append_byte(&wv, ',');
        sluice_buf_append_i64(&wv, w->end);
        sluice_buf_append_str(&wv, w->firing == SLUICE_LATE ? ",late" : w->firing == SLUICE_EARLY ? ",early" : ",on-time");
        h.value = sluice_buf_bytes(&wv);
        o.headers = &h;
        o.header_count = 1;
    }
    sluice_emit(&o);
    if (right != NULL && sluice_bytes_equal(right->value, SLUICE_LIT("twice"))) sluice_emit(&o);
    sluice_buf_free(&v);
    sluice_buf_free(&wv);
    return bad ? sluice_error("bad value in pair") : SLUICE_OK;
}

/* put_interval_head puts an interval join's head: key, time, the sides. */
static void put_interval_head(tbuf *b, uint32_t origin, const char *key, int64_t time, const char *sides) {
    put_record(b, origin, &(trec){key, sides, time, NULL, NULL});
}

/* set_input sets the input of the record that starts at offset at. */
static void set_input(tbuf *b, size_t at, uint8_t input) { b->p[at + 8] = input; }

/* join_fails calls sluice_join with b and checks that the call fails with a
 * message that contains want. */
static void join_fails(tbuf *b, const char *want) {
    static const sluice_operator op = {.join = pair_join};
    use(&op);
    int32_t st = call_export(sluice_join, b);
    if (st != SLUICE_STATUS_ERROR || strstr(host.last_log, want) == NULL)
        fprintf(stderr, "sluice_join: status %d, log %s; want an error with %s\n", st, host.last_log, want);
    CHECK(st == SLUICE_STATUS_ERROR && strstr(host.last_log, want) != NULL && host.nrejects == 0);
    free(b->p);
    *b = (tbuf){0};
}

static void test_join(void) {
    static const sluice_operator op = {.join = pair_join};
    use(&op);
    CHECK(sluice_kinds() == SLUICE_KIND_JOIN && host.nlogs == 0);

    tbuf b = {0};
    put32(&b, 6);
    /* 0: a window join's matched pair, each record with its own header, the
     * right one from input 1. */
    put_fire(&b, 0, "a", -10, 10, "on-time", "\x03");
    put32(&b, 2);
    put_record(&b, 0, &(trec){"a", "x", 1, "h", "p"});
    size_t right = b.n;
    put_record(&b, 1, &(trec){"a", "y", 2, "h", "q"});
    set_input(&b, right, 1);
    /* 1: an interval join's left record alone. */
    put_interval_head(&b, 1, "b", 70, "\x01");
    put32(&b, 1);
    put_record(&b, 2, &(trec){"b", "l", 70, NULL, NULL});
    /* 2: a late window's right record alone. */
    put_fire(&b, 2, "c", 0, 60, "late", "\x02");
    put32(&b, 1);
    right = b.n;
    put_record(&b, 3, &(trec){"c", "r", 5, NULL, NULL});
    set_input(&b, right, 1);
    /* 3: a pair that fails after emitting: rejected, its output dropped. */
    put_interval_head(&b, 3, "d", 8, "\x03");
    put32(&b, 2);
    put_record(&b, 4, &(trec){"d", "v", 7, NULL, NULL});
    put_record(&b, 5, &(trec){"d", "bad", 8, NULL, NULL});
    /* 4: two results for one pair. */
    put_fire(&b, 4, "e", 0, 60, "early", "\x03");
    put32(&b, 2);
    put_record(&b, 6, &(trec){"e", "1", 1, NULL, NULL});
    put_record(&b, 7, &(trec){"e", "twice", 2, NULL, NULL});
    /* 5: a lone left record that fails. */
    put_interval_head(&b, 5, "f", 9, "\x01");
    put32(&b, 1);
    put_record(&b, 8, &(trec){"f", "bad", 9, NULL, NULL});
    CHECK(call_export(sluice_join, &b) == SLUICE_STATUS_OK);
    static const struct {
        uint32_t origin;
        const char *key, *value, *window;
    } want[] = {
        {0, "a", "px@0|qy@1", "-10,10,on-time"},
        {1, "b", "l@0|-", NULL},
        {2, "c", "-|r@1", "0,60,late"},
        {4, "e", "1@0|twice@0", "0,60,early"},
        {4, "e", "1@0|twice@0", "0,60,early"},
    };
    CHECK(host.nouts == sizeof want / sizeof want[0]);
    for (size_t i = 0; i < host.nouts && i < sizeof want / sizeof want[0]; i++) {
        const out_rec *o = &host.outs[i];
        CHECK(o->origin == want[i].origin && strcmp(o->key, want[i].key) == 0 && strcmp(o->value, want[i].value) == 0);
        if (want[i].window == NULL) {
            CHECK(o->headers == 0);
        } else {
            CHECK(o->headers == 1 && strcmp(o->hname, "w") == 0 && strcmp(o->hvalue, want[i].window) == 0);
        }
    }
    CHECK(host.nrejects == 2 && host.rejects[0] == 3 && host.rejects[1] == 5);
    CHECK(strcmp(host.reject_msg[0], "bad value in pair") == 0 && strcmp(host.reject_msg[1], "bad value in pair") == 0);
    free(b.p);

    /* No pairs: no output. */
    use(&op);
    b = (tbuf){0};
    put32(&b, 0);
    CHECK(call_export(sluice_join, &b) == SLUICE_STATUS_OK && host.emits == 0 && host.nlogs == 0);
    free(b.p);
    b = (tbuf){0};

    /* Heads and member counts the ABI does not allow fail the call. */
    static const struct {
        const char *sides;
        uint32_t members;
        const char *want;
    } bad[] = {
        {"", 0, "sluice_join: pair 1: the head's value is not one byte of sides"},
        {"\x04", 1, "sluice_join: pair 1: the head's value is not one byte of sides"},
        {"\x07", 2, "sluice_join: pair 1: the head's value is not one byte of sides"},
        {"\x01\x02", 2, "sluice_join: pair 1: the head's value is not one byte of sides"},
        {"\x03", 1, "sluice_join: pair 1 has 1 records, and its head says 2"},
        {"\x01", 2, "sluice_join: pair 1 has 2 records, and its head says 1"},
        {"\x02", 0, "sluice_join: pair 1 has 0 records, and its head says 1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put32(&b, 2);
        put_interval_head(&b, 0, "k", 1, "\x01");
        put32(&b, 1);
        put_record(&b, 0, &(trec){"k", "v", 1, NULL, NULL});
        put_interval_head(&b, 1, "k", 1, bad[i].sides);
        put32(&b, bad[i].members);
        for (uint32_t k = 0; k < bad[i].members; k++) put_record(&b, 1 + k, &(trec){"k", "v", 1, NULL, NULL});
        join_fails(&b, bad[i].want);
    }
    /* A zero byte of sides. */
    put32(&b, 1);
    put_interval_head(&b, 0, "k", 1, "\x01");
    b.p[b.n - 4 - 1] = 0; /* the value's one byte, before the header count */
    put32(&b, 0);
    join_fails(&b, "pair 0: the head's value is not one byte of sides");
    /* Headers that are not a window's. */
    put32(&b, 1);
    put_record(&b, 0, &(trec){"k", "\x01", 1, "sluice-window-start", "12345678"});
    put32(&b, 1);
    put_record(&b, 0, &(trec){"k", "v", 1, NULL, NULL});
    join_fails(&b, "sluice_join: pair 0 has headers that are not a window's");
    /* Malformed groups. */
    put32(&b, 2);
    put_interval_head(&b, 0, "k", 1, "\x01");
    put32(&b, 1);
    put_record(&b, 0, &(trec){"k", "v", 1, NULL, NULL});
    join_fails(&b, "sluice_join: malformed input");
    put32(&b, 1);
    put_interval_head(&b, 0, "k", 1, "\x03");
    put32(&b, 2);
    put_record(&b, 0, &(trec){"k", "v", 1, NULL, NULL});
    join_fails(&b, "sluice_join: malformed input");
    put32(&b, 1);
    put_interval_head(&b, 0, "k", 1, "\x01");
    put32(&b, 1);
    put_record(&b, 0, &(trec){"k", "v", 1, NULL, NULL});
    put32(&b, 0);
    join_fails(&b, "sluice_join: malformed input");

    /* The wrong export for the kind, and the join export for another kind. */
    use(&op);
    b = batch_of(&(trec){"k", "v", 0, NULL, NULL}, 1);
    CHECK(call_process(&b) == SLUICE_STATUS_ERROR && strstr(host.last_log, "sets join: it serves join operators") != NULL);
    CHECK(call_export(sluice_window_fire, &b) == SLUICE_STATUS_ERROR && strstr(host.last_log, "sets join, not window_fire") != NULL);
    static const sluice_operator win = {.window_fire = concat_fire};
    use(&win);
    CHECK(call_export(sluice_join, &b) == SLUICE_STATUS_ERROR && strstr(host.last_log, "sets window_fire, not join") != NULL);
    free(b.p);

    static const sluice_operator both = {.window_fire = concat_fire, .join = pair_join};
    use(&both);
    CHECK(sluice_kinds() == 0 && strstr(host.last_log, "sets both window_fire and join: set exactly one of map, filter, "
                                                       "flatmap, keyed, plan, agg_add, window_fire or join") != NULL);
}

static void test_alloc(void) {
    static const sluice_operator m = {.map = identity};
    use(&m);
    CHECK(sluice_alloc(-1) == NULL && sluice_alloc((1 << 30) + 1) == NULL);
    uint8_t *a = sluice_alloc(0);
    uint8_t *b = sluice_alloc(100); /* a second region for the same call */
    CHECK(a != NULL && b != NULL && a != b);
    memset(b, 1, 100);
    tbuf e = batch_of(NULL, 0);
    CHECK(sluice_process(a, 0) == SLUICE_STATUS_ERROR); /* an empty region is no batch */
    uint8_t *c = sluice_alloc(10);
    CHECK(c == a); /* the input region is reused */
    memcpy(c, e.p, e.n);
    CHECK(sluice_process(c, (uint32_t)e.n) == SLUICE_STATUS_OK && host.emits == 0);
    uint8_t *d = sluice_alloc(1 << 20); /* grown */
    CHECK(d != NULL);
    d[(1 << 20) - 1] = 0;
    free(e.p);
}

/* ---------------------------------------------------------------------- */
/* Transactional operators: the ABI.md section 10.5 examples. */

static int plan_example(const sluice_record *e, sluice_planner *p) {
    if (!sluice_bytes_equal(e->key, SLUICE_LIT("e2"))) return SLUICE_OK;
    static const uint8_t arg[] = {5, 0, 0, 0};
    sluice_key reads[] = {{1, SLUICE_LIT("b")}};
    sluice_plan_write(p, 0, SLUICE_LIT("a7"), 1, sluice_bytes_of(arg, 4), reads, 1);
    return SLUICE_OK;
}

static int plan_bad_fn(const sluice_record *e, sluice_planner *p) {
    (void)e;
    sluice_plan_nondet(p, 3, 7, SLUICE_LIT(""), NULL, 0);
    return SLUICE_OK;
}

static int plan_nondet(const sluice_record *e, sluice_planner *p) {
    (void)e;
    sluice_key r = {2, SLUICE_LIT("q")};
    sluice_plan_nondet(p, 3, 0, SLUICE_LIT("xy"), &r, 1);
    return SLUICE_OK;
}

static sluice_effect add_five(sluice_call *c) {
    if (c->fn != 1 || c->event != 2 || c->op != 0 || c->nondet || c->table != 0) return sluice_fail("request fields");
    if (!sluice_bytes_equal(c->key, SLUICE_LIT("a7")) || !c->own.found || c->own.bytes.len != 8)
        return sluice_fail("own");
    if (c->read_count != 1 || c->reads[0].table != 1 || !sluice_bytes_equal(c->reads[0].key, SLUICE_LIT("b")) ||
        c->reads[0].value.found)
        return sluice_fail("reads");
    if (c->arg.len != 4 || c->arg.ptr[0] != 5) return sluice_fail("arg");
    uint8_t *v = sluice_call_scratch(c, 8);
    memcpy(v, c->own.bytes.ptr, 8);
    v[0] += c->arg.ptr[0];
    return sluice_write(v, 8);
}

static sluice_effect bad_read(sluice_call *c) {
    sluice_value v = sluice_call_read(c, 3);
    return v.found ? sluice_abort() : sluice_write(NULL, 0);
}

static sluice_effect nondet(sluice_call *c) {
    sluice_buf v = SLUICE_BUF_INIT;
    int found = sluice_txn_get(c, 3, SLUICE_LIT("k\n1"), &v);
    if (found == SLUICE_STATUS_UNDECLARED) {
        sluice_buf_free(&v);
        return sluice_fail("refused");
    }
    if (found != 1 || v.len != 40) return sluice_fail("get");
    int st = sluice_txn_put(c, 3, SLUICE_LIT("k2"), sluice_bytes_of(v.ptr, 2));
    sluice_buf_free(&v);
    return st == SLUICE_STATUS_OK ? sluice_keep() : sluice_fail("put");
}

static sluice_effect ignore_refusal(sluice_call *c) {
    sluice_buf v = SLUICE_BUF_INIT;
    sluice_txn_get(c, 3, SLUICE_LIT("k\n1"), &v);
    sluice_buf_free(&v);
    return sluice_keep();
}

static int post_example(const sluice_record *e, const sluice_outcome *o) {
    if (!o->committed || o->op_count != 1) return sluice_error("outcome");
    const sluice_op_outcome *op = &o->ops[0];
    if (!op->executed || !op->own.found || op->own.bytes.len != 8 || op->own.bytes.ptr[0] != 100)
        return sluice_error("own");
    if (op->read_count != 1 || op->reads[0].found || op->get_count != 0) return sluice_error("reads");
    sluice_record out = {e->key, SLUICE_LIT("posted"), 42, NULL, 0, 0};
    sluice_emit(&out);
    return SLUICE_OK;
}

static int post_reject(const sluice_record *e, const sluice_outcome *o) {
    (void)o;
    sluice_emit(e);
    return sluice_error("post says no");
}

static int32_t call_apply(const tbuf *req) {
    uint8_t *in = sluice_alloc((int32_t)req->n);
    memcpy(in, req->p, req->n);
    return sluice_apply(in, (uint32_t)req->n);
}

static void example_request(tbuf *q) {
    static const uint8_t want[75] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0,   0,   0, 0,
                                     0, 0, 0, 2, 0, 0, 0, 'a', '7', 8, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                                     1, 0, 0, 0, 1, 0, 0, 0, 'b', 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0};
    put64(q, 0);
    put32(q, 1);
    put32(q, 2);
    put32(q, 0);
    put32(q, 2);
    put32(q, 0);
    putf(q, "a7");
    put32(q, 8);
    put64(q, 100);
    put32(q, 1);
    put32(q, 1);
    putf(q, "b");
    put32(q, 0);
    put32(q, 0);
    put32(q, 4);
    put32(q, 5);
    CHECK(q->n == sizeof want && memcmp(q->p, want, q->n) == 0);
}

static void test_txn(void) {
    const sluice_operator op = {.plan = plan_example, SLUICE_FUNCS(keep_fn, add_five), .post = post_example};
    use(&op);
    CHECK(call_configure("") == SLUICE_STATUS_OK);

    /* plan: the 43-byte declaration of ABI.md 10.5, for event 2. */
    trec evs[] = {{"e0", "", 0, NULL, NULL}, {"e1", "", 1, NULL, NULL}, {"e2", "", 2, NULL, NULL}};
    tbuf events = batch_of(evs, 3);
    uint8_t *in = sluice_alloc((int32_t)events.n);
    memcpy(in, events.p, events.n);
    CHECK(sluice_plan(in, (uint32_t)events.n) == SLUICE_STATUS_OK);
    static const uint8_t decl[43] = {2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 'a', '7',
                                     1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 'b', 4, 0, 0, 0, 5, 0, 0, 0};
    CHECK(host.plan.n == sizeof decl && memcmp(host.plan.p, decl, sizeof decl) == 0);

    /* apply: the 75-byte request; the result slot points at the value. */
    tbuf q = {0};
    example_request(&q);
    in = sluice_alloc((int32_t)q.n);
    memcpy(in, q.p, q.n);
    CHECK(sluice_apply(in, (uint32_t)q.n) == 0);
    size_t n;
    const uint8_t *w = sluice_test_written(&n);
    CHECK(n == 8 && w[0] == 105 && get32(in + 4) == 8 && get32(in) == (uint32_t)(uintptr_t)w);
    /* The host writes the next request into the same region. */
    memcpy(in, q.p, q.n);
    in[8] = 0; /* fn 0: keep */
    CHECK(sluice_apply(in, (uint32_t)q.n) == 1);
    in[8] = 9; /* no such function */
    CHECK(sluice_apply(in, (uint32_t)q.n) == SLUICE_STATUS_ERROR && strstr(host.last_log, "names function 9") != NULL);
    in[8] = 1;
    CHECK(sluice_apply(in, (uint32_t)q.n - 1) == SLUICE_STATUS_ERROR &&
          strstr(host.last_log, "malformed apply request") != NULL);
    memcpy(in, q.p, q.n);
    in[59] = 2; /* found flag 2 */
    CHECK(sluice_apply(in, (uint32_t)q.n) == SLUICE_STATUS_ERROR &&
          strstr(host.last_log, "read value is 2, want 0 or 1") != NULL);

    /* post: the 48-byte outcomes of ABI.md 10.5, one event. */
    tbuf one = batch_of(&evs[2], 1);
    tbuf oc = {0};
    put32(&oc, 1);
    put32(&oc, 1);
    put32(&oc, 1);
    put32(&oc, 1);
    put32(&oc, 1);
    put32(&oc, 8);
    put64(&oc, 100);
    put32(&oc, 1);
    put32(&oc, 0);
    put32(&oc, 0);
    put32(&oc, 0);
    CHECK(oc.n == 48);
    in = sluice_alloc((int32_t)(one.n + oc.n));
    memcpy(in, one.p, one.n);
    memcpy(in + one.n, oc.p, oc.n);
    host.nouts = 0;
    CHECK(sluice_post(in, (uint32_t)one.n, in + one.n, (uint32_t)oc.n) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 1 && strcmp(host.outs[0].value, "posted") == 0 && host.outs[0].origin == 0);
    /* Trailing bytes after the outcomes, and a committed flag of 2. */
    CHECK(sluice_post(in, (uint32_t)one.n, in + one.n, (uint32_t)oc.n - 1) == SLUICE_STATUS_ERROR);
    in[one.n + 4] = 2;
    CHECK(sluice_post(in, (uint32_t)one.n, in + one.n, (uint32_t)oc.n) == SLUICE_STATUS_ERROR &&
          strstr(host.last_log, "committed is 2") != NULL);

    /* A post error dead-letters the event and drops its outputs. */
    const sluice_operator rej = {.plan = plan_example, SLUICE_FUNCS(keep_fn), .post = post_reject};
    use(&rej);
    in = sluice_alloc((int32_t)(one.n + oc.n));
    memcpy(in, one.p, one.n);
    memcpy(in + one.n, oc.p, oc.n);
    CHECK(sluice_post(in, (uint32_t)one.n, in + one.n, (uint32_t)oc.n) == SLUICE_STATUS_OK);
    CHECK(host.nouts == 0 && host.nrejects == 1 && strcmp(host.reject_msg[0], "post says no") == 0);

    /* A function index out of range fails plan. */
    const sluice_operator badfn = {.plan = plan_bad_fn, SLUICE_FUNCS(keep_fn)};
    use(&badfn);
    in = sluice_alloc((int32_t)events.n);
    memcpy(in, events.p, events.n);
    CHECK(sluice_plan(in, (uint32_t)events.n) == SLUICE_STATUS_ERROR &&
          strcmp(host.last_log,
                 "plan: event 0: operation names function 7, but the operator has 1 functions (funcs)") == 0);
    free(events.p);
    free(one.p);
    free(oc.p);
    free(q.p);
}

static void test_txn_access(void) {
    const sluice_operator op = {.plan = plan_nondet, SLUICE_FUNCS(nondet, bad_read, ignore_refusal)};
    use(&op);
    trec ev = {"e", "", 0, NULL, NULL};
    tbuf events = batch_of(&ev, 1);
    uint8_t *in = sluice_alloc((int32_t)events.n);
    memcpy(in, events.p, events.n);
    CHECK(sluice_plan(in, (uint32_t)events.n) == SLUICE_STATUS_OK);
    /* event 0, fn 0, flags 1 (non-deterministic), table 3, no key, one read (2, "q"), arg "xy" */
    CHECK(host.plan.n == 20 + 4 + 4 + 4 + 1 + 4 + 2 && get32(host.plan.p + 8) == 1 && get32(host.plan.p + 16) == 0);

    tbuf q = {0};
    put64(&q, 0);
    put32(&q, 0);
    put32(&q, 0);
    put32(&q, 0);
    put32(&q, 1);
    put32(&q, 3);
    putf(&q, "");
    putf(&q, "");
    put32(&q, 0);
    putf(&q, "xy");
    host.txn_found = 1;
    put(&host.txn_value, "0123456789012345678901234567890123456789", 40);
    CHECK(call_apply(&q) == 1 && strcmp(host.txn_put_key, "k2") == 0 && strcmp(host.txn_put_value, "01") == 0);

    host.undeclared = 1;
    CHECK(call_apply(&q) == SLUICE_STATUS_ERROR);
    CHECK(strcmp(host.last_log, "apply: event 0 operation 0: function 0 failed: refused") == 0);
    q.p[8] = 2; /* a function that ignores the refusal still fails */
    CHECK(call_apply(&q) == SLUICE_STATUS_ERROR);
    CHECK(strcmp(host.last_log, "apply: event 0 operation 0: function 2 failed: sluice: state access outside the "
                                "operation's declaration: get of table 3 key \"k\\n1\"") == 0);
    q.p[8] = 1; /* a read index out of range fails */
    CHECK(call_apply(&q) == SLUICE_STATUS_ERROR && strstr(host.last_log, "read index 3 of 0 declared reads") != NULL);
    free(events.p);
    free(q.p);
}

/* ---------------------------------------------------------------------- */
/* Helpers: Go's quoting, decimal numbers, headers. */

static void test_quote(void) {
    /* Expected values from Go's strconv.Quote (go1.26). */
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } v[] = {
        {"", 0, "\042\042"},
        {"plain", 5, "\042plain\042"},
        {"a\042b\134c", 5, "\042a\134\042b\134\134c\042"},
        {"\007\010\014\012\015\011\013\000\037\177", 10,
         "\042\134a\134b\134f\134n\134r\134t\134v\134x00\134x1f\134x7f\042"},
        {"h\303\251llo w\303\266rld", 13, "\042h\303\251llo w\303\266rld\042"},
        {"\377\376", 2, "\042\134xff\134xfe\042"},
        {"\300\257", 2, "\042\134xc0\134xaf\042"},
        {"\355\240\200", 3, "\042\134xed\134xa0\134x80\042"},
        {"\340\200", 2, "\042\134xe0\134x80\042"},
        {"\364\220\200\200", 4, "\042\134xf4\134x90\134x80\134x80\042"},
        {"\302\240\302\255\302\205", 6, "\042\134u00a0\134u00ad\134u0085\042"},
        {"\342\200\250\357\273\277\360\237\230\200\363\240\200\201\364\217\277\277", 18,
         "\042\134u2028\134ufeff\360\237\230\200\134U000e0001\134U0010ffff\042"},
        {"\357\277\275", 3, "\042\357\277\275\042"},
        {"\346\227\245\346\234\254\350\252\236", 9, "\042\346\227\245\346\234\254\350\252\236\042"},
        {"\360\235\220\200\315\270", 6, "\042\360\235\220\200\134u0378\042"},
        {"\342\202", 2, "\042\134xe2\134x82\042"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sluice_buf b = SLUICE_BUF_INIT;
        sluice_buf_append_quoted(&b, v[i].in, v[i].n);
        if (b.len != strlen(v[i].want) || memcmp(b.ptr, v[i].want, b.len) != 0) {
            fprintf(stderr, "quote vector %zu: got %.*s, want %s\n", i, (int)b.len, (const char *)b.ptr, v[i].want);
            failures++;
        }
        sluice_buf_free(&b);
    }
}

static void test_numbers_and_headers(void) {
    sluice_buf b = SLUICE_BUF_INIT;
    sluice_buf_append_i64(&b, INT64_MIN);
    sluice_buf_append_byte(&b, ' ');
    sluice_buf_append_i64(&b, 0);
    sluice_buf_append_byte(&b, ' ');
    sluice_buf_append_u64(&b, UINT64_MAX);
    CHECK(b.len == strlen("-9223372036854775808 0 18446744073709551615") &&
          memcmp(b.ptr, "-9223372036854775808 0 18446744073709551615", b.len) == 0);
    sluice_buf_free(&b);
    CHECK(b.ptr == NULL && b.len == 0 && b.cap == 0);

    sluice_header hs[] = {{SLUICE_LIT("a"), SLUICE_LIT("1")}, {SLUICE_LIT("b"), SLUICE_LIT("2")},
                          {SLUICE_LIT("a"), SLUICE_LIT("3")}};
    sluice_record r = {SLUICE_LIT(""), SLUICE_LIT(""), 0, hs, 3, 0};
    const sluice_bytes *v = sluice_record_header(&r, "a");
    CHECK(v != NULL && v->len == 1 && v->ptr[0] == '1');
    CHECK(sluice_record_header(&r, "c") == NULL);
}

/* expect_trap runs fn in a child process and requires it to trap. */
static void expect_trap(const char *name, void (*fn)(void)) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        fn();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status)) {
        fprintf(stderr, "%s: did not trap\n", name);
        failures++;
    }
}

static void emit_outside(void) {
    sluice_record r = {SLUICE_LIT("k"), SLUICE_LIT("v"), 0, NULL, 0, 0};
    sluice_emit(&r);
}

static void state_outside(void) { sluice_state_put(0, SLUICE_LIT("k"), SLUICE_LIT("v")); }

int main(void) {
    test_abi_example();
    test_map();
    test_filter();
    test_malformed();
    test_inputs();
    test_flatmap();
    test_flush();
    test_keyed();
    test_configure();
    test_definitions();
    test_kinds();
    test_alloc();
    test_window();
    test_join();
    test_txn();
    test_txn_access();
    test_quote();
    test_numbers_and_headers();
    expect_trap("sluice_emit outside a callback", emit_outside);
    expect_trap("sluice_state_put outside a callback", state_outside);
    host_reset();
    sluice_test_use(NULL);
    if (failures > 0) {
        fprintf(stderr, "FAIL: %d checks failed\n", failures);
        return 1;
    }
    printf("ok: sluice.c native tests passed\n");
    return 0;
}
