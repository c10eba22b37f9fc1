/*
 * ledger: the conformance twin of plugins/ledger (package ledgerop) in C:
 * MorphStream's Streaming Ledger as a transactional operator, with the same
 * tables, event decoding (txn/apps/ledger/event), declarations, functions,
 * outputs and messages, byte for byte.
 *
 * Tables: handle 0 "accounts", handle 1 "book_entries"; keys the 8-digit
 * decimal of the index; balances int64, 8 bytes little endian (an empty or
 * absent value is 0).
 *
 * A deposit declares two read-modify-writes with FN_CREDIT: the account,
 * then the book entry. A transfer declares four, each reading the source
 * account as a parametric dependency: debit the source book entry
 * (FN_DEBIT_IF_FUNDED), credit the destination account and book entry
 * (FN_CREDIT_IF_FUNDED), and last debit the source account
 * (FN_DEBIT_IF_FUNDED on its own balance). Each is conditioned on the
 * source account holding the amount, a debit on its own balance holding it
 * too, so a transfer commits only when both the source account and the
 * source book entry hold the amount. A condition that fails, or
 * arithmetic that would overflow an int64, aborts the event. Every
 * operation first spins for the event's busy-ns. Post emits one record per
 * event, with its key and time:
 *
 *   deposit committed|aborted <account> <book entry>
 *   transfer committed|aborted <src account> <src book> <dst account> <dst book>
 *
 * the balances read before the event changed them, "-" for one it never
 * read. An event that does not decode declares nothing and is
 * dead-lettered by post with the decoder's message.
 *
 * Build (in this directory):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -s \
 *       -I ../../../../sdk/c -o ledger.wasm *.c ../../../../sdk/c/sluice.c
 */
#include <string.h>

#include "sluice.h"

enum { ACCOUNTS = 0, BOOKS = 1 };
enum { FN_CREDIT, FN_CREDIT_IF_FUNDED, FN_DEBIT_IF_FUNDED };
enum { KEY_WIDTH = 8, ARG_SIZE = 12, MAX_KEYS = 100000000 };

/* ---------------------------------------------------------------------- */
/* Events (txn/apps/ledger/event, format v1). */

typedef struct event {
    bool deposit;
    uint32_t account, book, dst_account, dst_book;
    int64_t amount;
    uint32_t busy_ns;
} event;

/*
 * wire reads an event as package wire's Reader does: the first failure
 * wins, and names its field, its byte offset and its reason.
 */
typedef struct wire {
    const uint8_t *b;
    size_t n, off;
    bool failed;
    const char *field;
    size_t at;
    char reason[64];
} wire;

static void wfail_at(wire *w, const char *field, size_t at, const char *reason) {
    if (w->failed) return;
    w->failed = true;
    w->field = field;
    w->at = at;
    strncpy(w->reason, reason, sizeof w->reason - 1);
}

static uint8_t wbyte(wire *w, const char *field) {
    if (w->failed) return 0;
    if (w->off >= w->n) {
        wfail_at(w, field, w->off, "truncated");
        return 0;
    }
    return w->b[w->off++];
}

static uint64_t wuvarint(wire *w, const char *field) {
    if (w->failed) return 0;
    uint64_t v = 0;
    for (size_t i = 0; w->off + i < w->n; i++) {
        uint8_t c = w->b[w->off + i];
        if (i == 9) { /* a tenth byte holds bit 63 only */
            if (c > 1) {
                wfail_at(w, field, w->off, "varint overflows 64 bits");
                return 0;
            }
            w->off += 10;
            return v | (uint64_t)c << 63;
        }
        if (c < 0x80) {
            w->off += i + 1;
            return v | (uint64_t)c << (7 * i);
        }
        v |= (uint64_t)(c & 0x7f) << (7 * i);
    }
    wfail_at(w, field, w->off, "truncated");
    return 0;
}

/* append_decimal writes v in decimal at d and returns the end. */
static char *append_decimal(char *d, uint64_t v) {
    char t[20];
    int i = 0;
    do {
        t[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (i > 0) *d++ = t[--i];
    return d;
}

static uint32_t wuvarint32(wire *w, const char *field, uint32_t max) {
    size_t at = w->off;
    uint64_t v = wuvarint(w, field);
    if (v > max) {
        char reason[64] = "out of range (over ";
        char *e = append_decimal(reason + strlen(reason), max);
        *e++ = ')';
        *e = 0;
        wfail_at(w, field, at, reason);
        return 0;
    }
    return (uint32_t)v;
}

static int64_t wint64(wire *w, const char *field) {
    size_t at = w->off;
    uint64_t v = wuvarint(w, field);
    if (v > (uint64_t)INT64_MAX) {
        wfail_at(w, field, at, "out of range (over 2^63-1)");
        return 0;
    }
    return (int64_t)v;
}

/* decode_event decodes b into e; on failure it leaves w failed. */
static void decode_event(const uint8_t *b, size_t n, event *e, wire *w) {
    static const char hex[] = "0123456789abcdef";
    memset(w, 0, sizeof *w);
    memset(e, 0, sizeof *e);
    w->b = b;
    w->n = n;
    uint8_t tag = wbyte(w, "tag");
    if (!w->failed && tag != 'L') {
        char reason[64] = "not a Streaming Ledger event (tag 0x__, want 0x4c)";
        char *digits = strchr(reason, '_');
        digits[0] = hex[tag >> 4];
        digits[1] = hex[tag & 15];
        wfail_at(w, "tag", 0, reason);
    }
    uint8_t flags = wbyte(w, "flags");
    if ((flags & ~1u) != 0) wfail_at(w, "flags", 1, "unknown flag bits");
    e->deposit = (flags & 1) != 0;
    e->account = wuvarint32(w, "account", MAX_KEYS - 1);
    e->book = wuvarint32(w, "book", MAX_KEYS - 1);
    if (!e->deposit) {
        e->dst_account = wuvarint32(w, "dst account", MAX_KEYS - 1);
        e->dst_book = wuvarint32(w, "dst book", MAX_KEYS - 1);
    }
    e->amount = wint64(w, "amount");
    e->busy_ns = wuvarint32(w, "busy-ns", UINT32_MAX);
    if (!w->failed && w->off != n) {
        char reason[64];
        char *end = append_decimal(reason, n - w->off);
        strcpy(end, " trailing bytes");
        wfail_at(w, "end", w->off, reason);
    }
}

/* wire_error appends "FORMAT: field F at byte N: REASON". */
static void wire_error(sluice_buf *m, const char *format, const char *field, size_t at, const char *reason) {
    sluice_buf_append_str(m, format);
    sluice_buf_append_str(m, ": field ");
    sluice_buf_append_str(m, field);
    sluice_buf_append_str(m, " at byte ");
    sluice_buf_append_u64(m, at);
    sluice_buf_append_str(m, ": ");
    sluice_buf_append_str(m, reason);
}

/* append_key writes key k in KEY_WIDTH decimal digits at d. */
static void append_key(uint8_t *d, uint32_t k) {
    for (int i = KEY_WIDTH - 1; i >= 0; i--) {
        d[i] = (uint8_t)('0' + k % 10);
        k /= 10;
    }
}

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------------------------------------------------------------- */
/* Plan. */

static int plan(const sluice_record *ev, sluice_planner *p) {
    event e;
    wire w;
    decode_event(ev->value.ptr, ev->value.len, &e, &w);
    if (w.failed) return SLUICE_OK; /* no operations: post dead-letters the event */
    uint8_t arg[ARG_SIZE];
    put_le64(arg, (uint64_t)e.amount);
    for (int i = 0; i < 4; i++) arg[8 + i] = (uint8_t)(e.busy_ns >> (8 * i));
    sluice_bytes a = sluice_bytes_of(arg, sizeof arg);
    uint8_t k[KEY_WIDTH], s[KEY_WIDTH];
    if (e.deposit) {
        append_key(k, e.account);
        sluice_plan_write(p, ACCOUNTS, sluice_bytes_of(k, KEY_WIDTH), FN_CREDIT, a, NULL, 0);
        append_key(k, e.book);
        sluice_plan_write(p, BOOKS, sluice_bytes_of(k, KEY_WIDTH), FN_CREDIT, a, NULL, 0);
        return SLUICE_OK;
    }
    append_key(s, e.account);
    sluice_key src = {ACCOUNTS, sluice_bytes_of(s, KEY_WIDTH)};
    append_key(k, e.book);
    sluice_plan_write(p, BOOKS, sluice_bytes_of(k, KEY_WIDTH), FN_DEBIT_IF_FUNDED, a, &src, 1);
    append_key(k, e.dst_account);
    sluice_plan_write(p, ACCOUNTS, sluice_bytes_of(k, KEY_WIDTH), FN_CREDIT_IF_FUNDED, a, &src, 1);
    append_key(k, e.dst_book);
    sluice_plan_write(p, BOOKS, sluice_bytes_of(k, KEY_WIDTH), FN_CREDIT_IF_FUNDED, a, &src, 1);
    sluice_plan_write(p, ACCOUNTS, src.key, FN_DEBIT_IF_FUNDED, a, NULL, 0);
    return SLUICE_OK;
}

/* ---------------------------------------------------------------------- */
/* Functions. */

/* sink keeps the busy work's result, so that the compiler keeps the work. */
static volatile uint64_t sink;

/*
 * spin works for about ns nanoseconds, as plugins/internal/busy.Spin: 600
 * iterations of a dependent multiply-xor chain per microsecond asked.
 */
static void spin(uint32_t ns) {
    uint64_t n = (uint64_t)ns * 600 / 1000;
    uint64_t h = (uint64_t)ns | 1;
    for (uint64_t i = 0; i < n; i++) {
        h ^= h >> 31;
        h *= UINT64_C(0x9e3779b97f4a7c15);
    }
    sink = h;
}

static sluice_buf msg;

/* fail_balance fails the operation on a balance of len bytes read from key,
 * with the Go operator's message ("ledger: key %q: ledger balance: ..."). */
static sluice_effect fail_balance(sluice_bytes key, size_t len) {
    msg.len = 0;
    sluice_buf_append_str(&msg, "ledger: key ");
    sluice_buf_append_quoted(&msg, key.ptr, key.len);
    sluice_buf_append_str(&msg, ": ");
    sluice_buf_append_str(&msg, "ledger balance: field balance at byte 0: length ");
    sluice_buf_append_u64(&msg, len);
    sluice_buf_append_str(&msg, ", want 0 or 8");
    return sluice_fail_bytes(msg.ptr, msg.len);
}

/* balance decodes a balance: empty is 0, else 8 bytes; false otherwise. */
static bool balance(sluice_bytes v, int64_t *b) {
    if (v.len == 0) {
        *b = 0;
        return true;
    }
    if (v.len != 8) return false;
    *b = (int64_t)le64(v.ptr);
    return true;
}

/* args decodes the operation's argument and does its busy work. */
static bool args(sluice_call *c, int64_t *amount, sluice_effect *fail) {
    if (c->arg.len != ARG_SIZE) {
        msg.len = 0;
        sluice_buf_append_str(&msg, "ledger: operation on key ");
        sluice_buf_append_quoted(&msg, c->key.ptr, c->key.len);
        sluice_buf_append_str(&msg, ": argument of ");
        sluice_buf_append_u64(&msg, c->arg.len);
        sluice_buf_append_str(&msg, " bytes, want 12");
        *fail = sluice_fail_bytes(msg.ptr, msg.len);
        return false;
    }
    uint32_t ns = (uint32_t)c->arg.ptr[8] | (uint32_t)c->arg.ptr[9] << 8 | (uint32_t)c->arg.ptr[10] << 16 |
                  (uint32_t)c->arg.ptr[11] << 24;
    spin(ns);
    *amount = (int64_t)le64(c->arg.ptr);
    return true;
}

/* put writes balance v, or aborts when the arithmetic overflowed. */
static sluice_effect put(sluice_call *c, int64_t v, bool overflow) {
    if (overflow) return sluice_abort();
    uint8_t *b = sluice_call_scratch(c, 8);
    put_le64(b, (uint64_t)v);
    return sluice_write(b, 8);
}

/* add and sub return the wrapped result and whether it overflowed. */
static int64_t add(int64_t a, int64_t b, bool *over) {
    int64_t s = (int64_t)((uint64_t)a + (uint64_t)b);
    *over = (s > a) != (b > 0);
    return s;
}

static int64_t sub(int64_t a, int64_t b, bool *over) {
    int64_t d = (int64_t)((uint64_t)a - (uint64_t)b);
    *over = (d < a) != (b > 0);
    return d;
}

static sluice_effect credit(sluice_call *c) {
    int64_t amount, b;
    sluice_effect fail;
    if (!args(c, &amount, &fail)) return fail;
    if (!balance(c->own.bytes, &b)) return fail_balance(c->key, c->own.bytes.len);
    bool over;
    int64_t v = add(b, amount, &over);
    return put(c, v, over);
}

/* if_funded applies op to the own balance when the source balance (read
 * 0, or the own balance without reads) covers the amount, and for a debit
 * the own balance too; else aborts. */
static sluice_effect if_funded(sluice_call *c, int64_t (*op)(int64_t, int64_t, bool *), bool debit) {
    int64_t amount, b;
    sluice_effect fail;
    if (!args(c, &amount, &fail)) return fail;
    if (!balance(c->own.bytes, &b)) return fail_balance(c->key, c->own.bytes.len);
    bool funded = b >= amount;
    if (c->read_count > 0) {
        sluice_value v = sluice_call_read(c, 0);
        int64_t src;
        if (!balance(v.bytes, &src)) return fail_balance(SLUICE_LIT("source account"), v.bytes.len);
        funded = src >= amount;
    }
    if (!funded || (debit && b < amount)) return sluice_abort();
    bool over;
    int64_t v = op(b, amount, &over);
    return put(c, v, over);
}

static sluice_effect credit_if_funded(sluice_call *c) { return if_funded(c, add, false); }
static sluice_effect debit_if_funded(sluice_call *c) { return if_funded(c, sub, true); }

/* ---------------------------------------------------------------------- */
/* Post. */

static sluice_buf out;

static int post(const sluice_record *ev, const sluice_outcome *o) {
    event e;
    wire w;
    decode_event(ev->value.ptr, ev->value.len, &e, &w);
    if (w.failed) {
        msg.len = 0;
        wire_error(&msg, "ledger event", w.field, w.at, w.reason);
        return sluice_error_bytes(msg.ptr, msg.len);
    }
    /* What the event read before it changed anything: a deposit its two
     * own keys; a transfer the source account (read 0 of its first
     * operation), then the own keys of its first three operations. */
    sluice_value vals[4];
    bool read[4] = {false, false, false, false};
    int n = e.deposit ? 2 : 4;
    for (int m = 0; m < n; m++) {
        if (!e.deposit && m == 0) {
            if (o->op_count > 0 && o->ops[0].executed && o->ops[0].read_count > 0) {
                vals[0] = o->ops[0].reads[0];
                read[0] = true;
            }
            continue;
        }
        size_t op = e.deposit ? (size_t)m : (size_t)m - 1;
        if (op < o->op_count && o->ops[op].executed) {
            vals[m] = o->ops[op].own;
            read[m] = true;
        }
    }
    out.len = 0;
    sluice_buf_append_str(&out, e.deposit ? "deposit" : "transfer");
    sluice_buf_append_str(&out, o->committed ? " committed" : " aborted");
    for (int m = 0; m < n; m++) {
        sluice_buf_append_byte(&out, ' ');
        if (!read[m]) {
            sluice_buf_append_byte(&out, '-');
            continue;
        }
        int64_t b;
        if (!balance(vals[m].bytes, &b)) {
            msg.len = 0;
            char reason[64] = "length ";
            char *end = append_decimal(reason + 7, vals[m].bytes.len);
            strcpy(end, ", want 0 or 8");
            wire_error(&msg, "ledger balance", "balance", 0, reason);
            return sluice_error_bytes(msg.ptr, msg.len);
        }
        sluice_buf_append_i64(&out, b);
    }
    sluice_record r = {ev->key, sluice_buf_bytes(&out), ev->time, NULL, 0};
    sluice_emit(&r);
    return SLUICE_OK;
}

SLUICE_OPERATOR = {
    .plan = plan,
    SLUICE_FUNCS(credit, credit_if_funded, debit_if_funded),
    .post = post,
};
