/*
 * sluice.h: the C SDK for Sluice operators, ABI version 1.
 *
 * An operator is a C file that defines its callbacks and names them in one
 * SLUICE_OPERATOR definition; sluice.c, compiled with it, supplies every
 * export the host calls (sluice_abi_version, sluice_alloc,
 * sluice_configure, sluice_process, sluice_plan, sluice_apply, sluice_post,
 * the window exports sluice_agg_add, sluice_agg_merge, sluice_agg_fire and
 * sluice_window_fire, and sluice_join) and dispatches to the callbacks,
 * and sluice_kinds, from which `sluice plugin build` writes the module's
 * sluice.kinds section (the operator kind its SLUICE_OPERATOR gives).
 * Build a module with clang and wasi-libc, as a WASI reactor:
 *
 *     clang --target=wasm32-wasi -O2 -mexec-model=reactor -s \
 *         -I sdk/c -o op.wasm op.c sdk/c/sluice.c
 *
 * A complete map operator:
 *
 *     #include "sluice.h"
 *
 *     static int upper(sluice_record *r) {
 *         for (size_t i = 0; i < r->value.len; i++)
 *             if (r->value.ptr[i] >= 'a' && r->value.ptr[i] <= 'z')
 *                 r->value.ptr[i] -= 'a' - 'A';
 *         return SLUICE_OK;
 *     }
 *
 *     SLUICE_OPERATOR = {.map = upper};
 *
 * The contract the SDK implements is abi/ABI.md; the Go SDK (sdk/go/sluice)
 * is its reference implementation, and this SDK mirrors its concepts:
 * one operator per module, of one of eight kinds (map, filter, flatmap,
 * keyed, transactional, aggregate, window, join), an optional configure
 * callback, errors that dead-letter one record, and the host's rules on
 * lifetimes and determinism. sdk/c/README.md is the guide.
 *
 * Lifetimes. Records handed to a callback alias the batch the host wrote
 * into guest memory: their bytes are valid until the callback returns (copy
 * what must outlive it) and may be modified in place. sluice_emit encodes
 * at once, so what an emitted record points to may be reused right after.
 *
 * Memory. The SDK uses wasi-libc's malloc (dlmalloc) for its input region,
 * its output buffer and its decoding arrays, all reused from call to call;
 * operators may use malloc freely. An allocation that fails traps the call
 * (the host dead-letters the batch's records one by one after a fresh
 * instance), as running out of memory does in any language.
 *
 * Errors. A callback returns SLUICE_OK, or the result of sluice_error (or
 * sluice_errorf, sluice_error_bytes), which records a message: for a record
 * callback, that dead-letters the record with the message and discards what
 * the callback emitted for it; for configure, the host refuses to start the
 * operator and reports the message; for plan, the batch fails. Bugs should
 * trap: sluice_panic writes a message to stderr, which the host quotes, and
 * traps.
 *
 * Determinism. A record may be processed more than once (after a failure,
 * on another worker, in a fresh instance) and a transactional function may
 * run several times for one operation: compute outputs and state from the
 * record, the state and the configuration only. The host gives the guest no
 * wall clock and no entropy of its own (ABI.md section 6).
 *
 * Everything here is for one module instance: the SDK keeps its state in
 * static storage, which WebAssembly gives each instance separately, and is
 * not thread-safe (a WebAssembly instance runs one call at a time).
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this SDK implements (sluice_abi_version's result). */
#define SLUICE_ABI_VERSION 1

/* Status codes of the ABI (ABI.md section 8). */
#define SLUICE_STATUS_OK 0
#define SLUICE_STATUS_NOT_FOUND (-1)
#define SLUICE_STATUS_ERROR (-2)
#define SLUICE_STATUS_BAD_CONFIG (-3)
#define SLUICE_STATUS_UNDECLARED (-4)

/* The bits of sluice_kinds' result, one per operator kind (ABI.md section 12). */
#define SLUICE_KIND_MAP 1
#define SLUICE_KIND_FILTER 2
#define SLUICE_KIND_FLATMAP 4
#define SLUICE_KIND_KEYED 8
#define SLUICE_KIND_TRANSACTIONAL 16
#define SLUICE_KIND_AGGREGATE 32
#define SLUICE_KIND_WINDOW 64
#define SLUICE_KIND_JOIN 128

/* The bits of sluice_features' result (ABI.md section 9). The SDK declares
 * SLUICE_FEATURE_INPUTS: every record it hands a callback has its input. */
#define SLUICE_FEATURE_INPUTS 1

/* The bits of a record's flags that hold its input (ABI.md section 4). */
#define SLUICE_FLAGS_INPUT 0xffffu

/* Callback results: SLUICE_OK, or SLUICE_ERR (what sluice_error returns). */
#define SLUICE_OK 0
#define SLUICE_ERR (-1)

/* Log levels (ABI.md section 3, log). */
typedef enum sluice_level {
    SLUICE_LOG_DEBUG = 0,
    SLUICE_LOG_INFO = 1,
    SLUICE_LOG_WARN = 2,
    SLUICE_LOG_ERROR = 3
} sluice_level;

/*
 * sluice_bytes is a byte string: ptr and len. It does not own its bytes.
 * ptr may be NULL when len is 0. The SDK never writes through the ptr of
 * a sluice_bytes it is given, except the input records' own bytes, which
 * a callback may change in place.
 */
typedef struct sluice_bytes {
    uint8_t *ptr;
    size_t len;
} sluice_bytes;

/* sluice_bytes_of returns the len bytes at p as a sluice_bytes. */
static inline sluice_bytes sluice_bytes_of(const void *p, size_t len) {
    sluice_bytes b;
    b.ptr = (uint8_t *)p;
    b.len = len;
    return b;
}

/* SLUICE_LIT is a string literal's bytes, without its terminating NUL. */
#define SLUICE_LIT(s) sluice_bytes_of("" s, sizeof(s) - 1)

/* sluice_cstr returns a NUL-terminated string's bytes, without the NUL. */
sluice_bytes sluice_cstr(const char *s);

/* sluice_bytes_equal reports whether a and b hold the same bytes. */
bool sluice_bytes_equal(sluice_bytes a, sluice_bytes b);

/* A record header: a name and a value, like a NATS message header. */
typedef struct sluice_header {
    sluice_bytes name;
    sluice_bytes value;
} sluice_header;

/*
 * sluice_record is one event. An input record handed to a callback
 * aliases the host's batch (see Lifetimes above); headers points to an
 * array the SDK owns and reuses, valid for the same time. To change a map
 * output's headers, point headers at an array of your own.
 */
typedef struct sluice_record {
    sluice_bytes key;
    sluice_bytes value;
    int64_t time; /* event time, nanoseconds since the Unix epoch */
    const sluice_header *headers;
    size_t header_count;
    /*
     * input is the position, in the operator's inputs list of the pipeline
     * file, of the input the record arrived on: 0 for an operator with one
     * input. A join tells its sides apart by it. Set on the records the
     * SDK hands a callback; ignored on the records a callback emits.
     */
    uint32_t input;
} sluice_record;

/*
 * sluice_record_header returns the value of r's first header called name
 * (compared byte for byte), or NULL when it has none.
 */
const sluice_bytes *sluice_record_header(const sluice_record *r, const char *name);

/*
 * sluice_buf is a growable byte buffer: ptr holds len bytes in a block of
 * cap. Zero-initialise it (SLUICE_BUF_INIT) and reuse it: the SDK's
 * functions that fill one (sluice_state_get, sluice_txn_get) grow it as
 * needed and keep its block. A failed allocation traps.
 */
typedef struct sluice_buf {
    uint8_t *ptr;
    size_t len;
    size_t cap;
} sluice_buf;

#define SLUICE_BUF_INIT {NULL, 0, 0}

/* sluice_buf_bytes returns the bytes b holds. */
static inline sluice_bytes sluice_buf_bytes(const sluice_buf *b) {
    return sluice_bytes_of(b->ptr, b->len);
}

/* sluice_buf_reserve makes room for n more bytes and returns where they go. */
uint8_t *sluice_buf_reserve(sluice_buf *b, size_t n);
/* sluice_buf_append appends the n bytes at p. */
void sluice_buf_append(sluice_buf *b, const void *p, size_t n);
/* sluice_buf_append_str appends a NUL-terminated string, without its NUL. */
void sluice_buf_append_str(sluice_buf *b, const char *s);
/* sluice_buf_append_byte appends one byte. */
void sluice_buf_append_byte(sluice_buf *b, uint8_t c);
/* sluice_buf_append_u64 appends v in decimal, like Go's strconv.AppendUint. */
void sluice_buf_append_u64(sluice_buf *b, uint64_t v);
/* sluice_buf_append_i64 appends v in decimal, like Go's strconv.AppendInt. */
void sluice_buf_append_i64(sluice_buf *b, int64_t v);
/*
 * sluice_buf_append_quoted appends the n bytes at p as a double-quoted
 * string exactly as Go's strconv.Quote (and fmt's %q) writes them:
 * printable runes as they are, \", \\, \a \b \f \n \r \t \v, \xNN for
 * bytes that are not UTF-8, \uNNNN or \UNNNNNNNN for runes that are not
 * printable (Unicode 15, Go 1.26's table). It serves messages that must
 * read as the Go SDK's operators write them.
 */
void sluice_buf_append_quoted(sluice_buf *b, const void *p, size_t n);
/*
 * sluice_utf8_decode decodes the UTF-8 sequence at s (n > 0 bytes) as Go's
 * utf8.DecodeRune does: it returns the rune and sets *width to its length,
 * or returns U+FFFD with *width 1 for a sequence that is invalid (an
 * overlong form, a surrogate, past U+10FFFF) or truncated.
 */
uint32_t sluice_utf8_decode(const uint8_t *s, size_t n, size_t *width);
/* sluice_buf_free releases b's block and empties it. */
void sluice_buf_free(sluice_buf *b);

/*
 * Errors and logs.
 *
 * sluice_error records msg as the reason the current callback fails and
 * returns SLUICE_ERR, for `return sluice_error("...");`. The message is
 * copied. sluice_error_bytes takes a length instead of a NUL, and
 * sluice_errorf formats as vsnprintf does (it links wasi-libc's printf,
 * about 16 KiB of module: prefer a sluice_buf on hot paths and in small modules).
 */
int sluice_error(const char *msg);
int sluice_error_bytes(const void *msg, size_t len);
int sluice_errorf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/*
 * sluice_log writes msg to the host's log at level; the host adds the
 * operator's name, keeps the first 1 KiB of a message and the first 64
 * messages of a call. It is a host call: keep it off per-record paths.
 */
void sluice_log(sluice_level level, const char *msg);
void sluice_log_bytes(sluice_level level, const void *msg, size_t len);
void sluice_logf(sluice_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

/*
 * sluice_panic writes "sluice: panic: " and msg to stderr and traps. The
 * host fails the call, quotes the end of stderr in the error, and replaces
 * the instance; in a record call, only the record that panics is
 * dead-lettered once the host has re-run the batch one record at a time.
 */
__attribute__((noreturn)) void sluice_panic(const char *msg);

/*
 * sluice_emit sends an output record whose origin is the input record (or
 * event, firing or join pair) being handled. It is valid during flatmap,
 * keyed, post, agg_fire, window_fire and join callbacks; anywhere else it
 * panics. r is encoded at once. Outputs reach the host at the end of the
 * batch, or between two records once about 1 MiB has gathered; those of a
 * record whose callback fails are discarded.
 */
void sluice_emit(const sluice_record *r);

/*
 * Keyed state (keyed operators only, during their callback).
 *
 * Tables are handles: 0 is the first table the pipeline declares for the
 * operator (its `state:` list); sluice_table_id resolves a name to its
 * handle, or returns SLUICE_STATUS_NOT_FOUND. Handles do not change for the
 * life of the instance: resolve once and keep the handle. A key must be
 * one of the worker's key groups: the record's own key always is.
 *
 * sluice_state_get copies key's value into value (replacing its content,
 * growing it as needed) and returns true, or returns false when the key is
 * absent (value's length is then 0). An empty value is not an absent one.
 * sluice_state_put and sluice_state_delete change the key; the host copies
 * key and value. Changes are visible to later reads at once.
 */
int32_t sluice_table_id(const char *name);
bool sluice_state_get(int32_t table, sluice_bytes key, sluice_buf *value);
void sluice_state_put(int32_t table, sluice_bytes key, sluice_bytes value);
void sluice_state_delete(int32_t table, sluice_bytes key);

/*
 * Transactional operators (ABI.md section 10).
 *
 * Per batch of events the host calls the operator's plan callback for each
 * event, to declare its operations through a sluice_planner; runs each
 * operation's function (an entry of funcs) when its inputs are known, with
 * a sluice_call that holds them; and calls post for each event with its
 * outcome, to emit outputs. Results equal running the events one after the
 * other, in order, whatever the host's strategy and worker count.
 */

/* sluice_key names one state entry: a table handle and a key. */
typedef struct sluice_key {
    uint32_t table;
    sluice_bytes key;
} sluice_key;

/* sluice_value is a value read from state, and whether the key existed. */
typedef struct sluice_value {
    bool found;
    sluice_bytes bytes;
} sluice_value;

/* sluice_kv is a key with the value read from it. */
typedef struct sluice_kv {
    uint32_t table;
    sluice_bytes key;
    sluice_value value;
} sluice_kv;

/* sluice_planner declares an event's operations; opaque. */
typedef struct sluice_planner sluice_planner;

/*
 * sluice_plan_write declares a deterministic operation: function fn (an
 * index into the operator's funcs) computes the new value of key in
 * table from that key's value and the values of reads, other keys it reads
 * (of any table), which order it after the earlier writers of those keys.
 * arg is handed to the function unchanged (the event's parameters).
 *
 * sluice_plan_nondet declares a non-deterministic operation over table:
 * its function may read and write any key of table with sluice_txn_get,
 * sluice_txn_put and sluice_txn_delete, besides reading reads. The host
 * orders it after every earlier and before every later operation on table.
 *
 * An event's operations run in declaration order, each seeing the writes
 * of those before it; an abort by any of them undoes them all. Keys, args
 * and reads are copied during the call. A function index out of range
 * fails the batch; using a planner outside its plan callback panics.
 */
void sluice_plan_write(sluice_planner *p, uint32_t table, sluice_bytes key, uint32_t fn,
                       sluice_bytes arg, const sluice_key *reads, size_t read_count);
void sluice_plan_nondet(sluice_planner *p, uint32_t table, uint32_t fn, sluice_bytes arg,
                        const sluice_key *reads, size_t read_count);

/*
 * sluice_call is one execution of an operation, handed to its function:
 * the operation (fn, event index, operation index within its event, own
 * table and key), the own key's value before the operation, the values of
 * its declared reads in declaration order, and its arg. Everything it
 * points to is valid until the function returns and must not be modified.
 * A non-deterministic operation has an empty key and own.found false.
 */
typedef struct sluice_call {
    uint32_t fn;
    uint32_t event;
    uint32_t op;
    bool nondet;
    uint32_t table;
    sluice_bytes key;
    sluice_value own;
    const sluice_kv *reads;
    size_t read_count;
    sluice_bytes arg;
} sluice_call;

/*
 * sluice_call_read returns declared read i's value. An index out of range
 * is an access outside the declaration: it returns a value not found and
 * fails the operation, whatever the function returns.
 */
sluice_value sluice_call_read(sluice_call *c, size_t i);

/*
 * sluice_call_scratch returns n bytes the SDK reuses from call to call,
 * for building the value a function writes: valid until it returns.
 */
uint8_t *sluice_call_scratch(sluice_call *c, size_t n);

/*
 * sluice_txn_get reads key of table as of the operation's place in event
 * order into value (replacing its content) and returns 1, or returns 0
 * when the key is absent. A deterministic operation may read its own key
 * and its declared reads; a non-deterministic one its declared reads and
 * any key of its table, seeing its own puts and deletes. Anything else
 * returns SLUICE_STATUS_UNDECLARED and fails the operation whatever the
 * function returns next (return sluice_fail at once).
 *
 * sluice_txn_put and sluice_txn_delete write a key of a non-deterministic
 * operation's table and return SLUICE_STATUS_OK, or
 * SLUICE_STATUS_UNDECLARED as above (a deterministic operation, another
 * table). The host copies key and value.
 */
int sluice_txn_get(sluice_call *c, uint32_t table, sluice_bytes key, sluice_buf *value);
int sluice_txn_put(sluice_call *c, uint32_t table, sluice_bytes key, sluice_bytes value);
int sluice_txn_delete(sluice_call *c, uint32_t table, sluice_bytes key);

/*
 * sluice_effect is what a function decides for its operation. Build one
 * with the functions below, never by hand.
 */
typedef struct sluice_effect {
    int32_t code;
    const uint8_t *ptr;
    size_t len;
} sluice_effect;

/*
 * sluice_write stores the len bytes at v as the own key's new value; they
 * must stay valid until the function returns (sluice_call_scratch, a
 * static buffer, or bytes of the call). sluice_keep leaves the key as it
 * is (no version is written); sluice_delete deletes it; sluice_abort aborts
 * the event's transaction (a condition failed: its writes are undone, its
 * later operations do not run, post sees it not committed). sluice_fail
 * fails the operation, and so the batch, with a message (a fault, not an
 * abort). For a non-deterministic operation only abort and fail count.
 */
sluice_effect sluice_write(const void *v, size_t len);
sluice_effect sluice_keep(void);
sluice_effect sluice_delete(void);
sluice_effect sluice_abort(void);
sluice_effect sluice_fail(const char *msg);
sluice_effect sluice_fail_bytes(const void *msg, size_t len);
sluice_effect sluice_failf(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* A transactional function: see sluice_call and sluice_effect. */
typedef sluice_effect (*sluice_txn_fn)(sluice_call *c);

/*
 * sluice_op_outcome is what one operation of an event read: executed is
 * false for the operations after the one that aborted the event (they
 * never ran, and their values are empty); own is the own key's value
 * before it; reads the declared reads' values; gets the other keys a
 * non-deterministic operation read with sluice_txn_get, in call order.
 */
typedef struct sluice_op_outcome {
    bool executed;
    sluice_value own;
    const sluice_value *reads;
    size_t read_count;
    const sluice_kv *gets;
    size_t get_count;
} sluice_op_outcome;

/* sluice_outcome is an event's outcome, handed to post. */
typedef struct sluice_outcome {
    bool committed;
    const sluice_op_outcome *ops; /* in declaration order */
    size_t op_count;
} sluice_outcome;

/* sluice_firing says why a window fires (ABI.md section 13). */
typedef enum sluice_firing { SLUICE_ON_TIME, SLUICE_EARLY, SLUICE_LATE } sluice_firing;

/*
 * sluice_window is a firing window [start, end), in ns since the Unix
 * epoch. The host stamps the results of a window, and those of a window
 * join's pair, with end - 1.
 */
typedef struct sluice_window {
    int64_t start, end;
    sluice_firing firing;
} sluice_window;

/*
 * sluice_operator names an operator's callbacks. Set exactly one record
 * callback, which gives the operator's kind:
 *
 *   map      one output per input: change *r (its fields, or its bytes in
 *            place). A record whose key, value, time and headers still
 *            point where they did (its bytes changed in place or not) is
 *            forwarded without being encoded again.
 *   filter   set *keep to forward the input unchanged, or leave it false.
 *   flatmap  any number of outputs per input, through sluice_emit.
 *   keyed    as flatmap, with the sluice_state_* functions for its key.
 *   plan     a transactional operator: plan declares each event's
 *            operations, funcs are their functions (func_count of them),
 *            post (optional) emits each event's outputs.
 *   agg_add  an aggregate (ABI.md section 13), with agg_merge and
 *            agg_fire: agg_add folds r into the accumulator in acc (empty
 *            when the window has none yet), changing acc in place; an
 *            accumulator takes at least one byte. An error rejects r and
 *            must leave acc as it was. agg_merge merges accumulator b into
 *            a; an error fails the call. agg_fire emits the results of
 *            key's window w, whose accumulator is acc, through
 *            sluice_emit; an error dead-letters the firing.
 *   window_fire  a window function: all of key's records of window w, in
 *            arrival order, emitting its results through sluice_emit; an
 *            error dead-letters every record of the window.
 *   join     a join function (ABI.md section 14): the host's join finds
 *            the pairs of records of its two inputs with equal keys in a
 *            window or an interval, and join builds each pair's results,
 *            emitting any number through sluice_emit. left is the record
 *            of the join's first input, right that of its second; one of
 *            them is NULL for an outer join's record that matched
 *            nothing. w is the pair's window, NULL for an interval join.
 *            The host stamps each result with w->end - 1, or for an
 *            interval join with the later of the two records' times. An
 *            error dead-letters the pair (the result the join makes
 *            without a plugin, a JSON object of the key and both values).
 *
 * A record callback that returns anything but SLUICE_OK dead-letters its
 * record (post: its event, whose state effects stay) with the message of
 * its sluice_error call and discards what it emitted for it.
 *
 * configure (optional) receives the operator's config from the pipeline
 * file, as JSON, once per instance before the first record; "null" when
 * the pipeline gives none. An error refuses the configuration. Without a
 * configure callback, the operator accepts only none, null or {}.
 */
typedef struct sluice_operator {
    int (*configure)(const uint8_t *config, size_t len);
    int (*map)(sluice_record *r);
    int (*filter)(const sluice_record *r, bool *keep);
    int (*flatmap)(const sluice_record *r);
    int (*keyed)(const sluice_record *r);
    int (*plan)(const sluice_record *event, sluice_planner *p);
    const sluice_txn_fn *funcs;
    size_t func_count;
    int (*post)(const sluice_record *event, const sluice_outcome *o);
    int (*agg_add)(sluice_buf *acc, const sluice_record *r);
    int (*agg_merge)(sluice_buf *a, sluice_bytes b);
    int (*agg_fire)(sluice_bytes key, const sluice_window *w, sluice_bytes acc);
    int (*window_fire)(sluice_bytes key, const sluice_window *w, const sluice_record *recs, size_t n);
    int (*join)(sluice_bytes key, const sluice_window *w, const sluice_record *left, const sluice_record *right);
} sluice_operator;

/*
 * SLUICE_OPERATOR defines the module's operator; write it once, at file
 * scope: `SLUICE_OPERATOR = {.flatmap = split, .configure = configure};`.
 * A module without one fails to link (undefined symbol
 * sluice_operator_def); a module with two, too.
 */
#define SLUICE_OPERATOR const sluice_operator sluice_operator_def
extern const sluice_operator sluice_operator_def;

/*
 * SLUICE_FUNCS sets funcs and func_count from a list of functions:
 * `SLUICE_OPERATOR = {.plan = plan, SLUICE_FUNCS(credit, debit), .post = post};`.
 */
#define SLUICE_FUNCS(...)                                \
    .funcs = (const sluice_txn_fn[]){__VA_ARGS__},       \
    .func_count = sizeof((const sluice_txn_fn[]){__VA_ARGS__}) / sizeof(sluice_txn_fn)

/*
 * The host's functions (ABI.md section 3), for code that needs the ABI
 * itself; the functions above wrap them. Pointers are offsets into the
 * module's memory. Outside WebAssembly (the SDK's native tests) they are
 * ordinary functions that a test defines.
 */
#if defined(__wasm__)
#define SLUICE_HOST_IMPORT(name) __attribute__((import_module("sluice"), import_name(name)))
#else
#define SLUICE_HOST_IMPORT(name)
#endif

SLUICE_HOST_IMPORT("emit") void sluice_host_emit(const void *batch, uint32_t len);
SLUICE_HOST_IMPORT("reject") void sluice_host_reject(uint32_t origin, const void *msg, uint32_t len);
SLUICE_HOST_IMPORT("table_id") int32_t sluice_host_table_id(const void *name, uint32_t len);
SLUICE_HOST_IMPORT("state_get")
int32_t sluice_host_state_get(int32_t table, const void *key, uint32_t key_len, void *buf, uint32_t buf_cap);
SLUICE_HOST_IMPORT("state_put")
void sluice_host_state_put(int32_t table, const void *key, uint32_t key_len, const void *val, uint32_t val_len);
SLUICE_HOST_IMPORT("state_delete") void sluice_host_state_delete(int32_t table, const void *key, uint32_t key_len);
SLUICE_HOST_IMPORT("log") void sluice_host_log(int32_t level, const void *msg, uint32_t len);
SLUICE_HOST_IMPORT("txn_plan") void sluice_host_txn_plan(const void *decls, uint32_t len);
SLUICE_HOST_IMPORT("txn_get")
int32_t sluice_host_txn_get(int32_t table, const void *key, uint32_t key_len, void *buf, uint32_t buf_cap);
SLUICE_HOST_IMPORT("txn_put")
int32_t sluice_host_txn_put(int32_t table, const void *key, uint32_t key_len, const void *val, uint32_t val_len);
SLUICE_HOST_IMPORT("txn_delete") int32_t sluice_host_txn_delete(int32_t table, const void *key, uint32_t key_len);

/*
 * The module's exports (ABI.md section 2), defined by sluice.c. The host
 * calls them; an operator does not.
 */
int32_t sluice_abi_version(void);
int32_t sluice_kinds(void);
int32_t sluice_features(void);
uint8_t *sluice_alloc(int32_t size);
int32_t sluice_configure(uint8_t *config, uint32_t len);
int32_t sluice_process(uint8_t *batch, uint32_t len);
int32_t sluice_plan(uint8_t *events, uint32_t len);
int32_t sluice_apply(uint8_t *request, uint32_t len);
int32_t sluice_post(uint8_t *events, uint32_t events_len, uint8_t *outcomes, uint32_t outcomes_len);
int32_t sluice_agg_add(uint8_t *groups, uint32_t len);
int32_t sluice_agg_merge(uint8_t *pairs, uint32_t len);
int32_t sluice_agg_fire(uint8_t *fires, uint32_t len);
int32_t sluice_window_fire(uint8_t *groups, uint32_t len);
int32_t sluice_join(uint8_t *groups, uint32_t len);

#if defined(SLUICE_NATIVE_TEST)
/*
 * Native tests only (built with -DSLUICE_NATIVE_TEST): run op instead of
 * SLUICE_OPERATOR, from a fresh guest state; the address and length of
 * the last value a function wrote (the result slot holds 32-bit
 * addresses only).
 */
void sluice_test_use(const sluice_operator *op);
const uint8_t *sluice_test_written(size_t *len);
#endif

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
