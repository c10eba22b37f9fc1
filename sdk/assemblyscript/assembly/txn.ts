// Transactional operators (ABI.md section 10): the handlers transactional
// registers, and sluice_plan, sluice_apply and sluice_post.

import * as host from "./host";
import {
  APPLY_ABORT, APPLY_DELETE, APPLY_FLAG_OWN_FOUND, APPLY_KEEP, APPLY_RESULT_SIZE, APPLY_WRITE, BATCH_HEADER_SIZE,
  OP_FLAG_NONDET, STATUS_ERROR, STATUS_NOT_FOUND, STATUS_OK, STATUS_UNDECLARED,
} from "./abi";
import { Bytes } from "./bytes";
import {
  Emitter, FLUSH_SIZE, KIND_NONE, KIND_TXN, handlerBegin, handlerEnd, hostReject, kind, kindName, misregistered,
  outFlush, outFull, outMark, outMarkCount, outReset, outRestore, register, servesWhat,
} from "./core";
import { Level, log, panic } from "./log";
import { quote } from "./quote";
import { Record } from "./record";
import { batchError, decodeAt, decodedRecord } from "./stream";

/** Key names one state entry: a table handle and a key. */
export class Key {
  constructor(public table: u32, public key: Bytes) {}
}

// ---- Registration -----------------------------------------------------------

let planFn: ((ev: Record, p: Planner) => void) | null = null;
let funcs: Array<(c: Call) => Effect> = new Array<(c: Call) => Effect>();
let postFn: ((ev: Record, o: Outcome, out: Emitter) => void) | null = null;

/**
 * Registers a transactional operator: its events (input records) are
 * transactions over the operator's shared tables, which the host runs on
 * several workers with the result of running them one by one, in order.
 *
 * Per batch of events, the host calls plan for each event, in order, to
 * declare the event's operations through a Planner; runs each operation's
 * function (an element of fns, named by its index) when the scheduler
 * reaches it, possibly several times, on any instance; and, once the
 * batch's outcome is known, calls post (optional) for each event with its
 * Outcome, to emit outputs. Call it from the module's top level.
 */
export function transactional(
  plan: (ev: Record, p: Planner) => void,
  fns: Array<(c: Call) => Effect>,
  post: ((ev: Record, o: Outcome, out: Emitter) => void) | null = null,
): void {
  if (fns.length == 0) {
    register(KIND_TXN, "transactional");
    misuse = "transactional: the function list is empty: every operation names a function";
    return;
  }
  if (!register(KIND_TXN, "transactional")) return;
  planFn = plan;
  funcs = fns.slice(0);
  postFn = post;
}

// A registration the first call reports (see core.ts for the others).
let misuse: string | null = null;

function notTxn(exp: string): i32 {
  if (misregistered()) return STATUS_ERROR;
  const m = misuse;
  if (m != null) {
    log(Level.Error, m);
  } else if (kind == KIND_NONE) {
    log(Level.Error, "no handler registered: a transactional operator calls transactional from the module's top level");
  } else {
    log(Level.Error, exp + " called, but this plugin registers a " + kindName + " handler, not a transactional one: it serves " + servesWhat(kind));
  }
  return STATUS_ERROR;
}

// ---- Plan -------------------------------------------------------------------

// The declarations gathered for txn_plan: address, length and capacity, in
// the call's arena.
let declPtr: usize = 0;
let declLen: i32 = 0;
let declCap: i32 = 0;

function declReserve(n: i32): usize {
  if (declCap - declLen < n) {
    const need = <i64>declLen + <i64>n;
    if (need > 0x7fffffff) panic("sluice: declarations over 2 GiB");
    const c = <i32>min<i64>(max<i64>(max<i64>(need, <i64>declCap * 2), 4096), 0x7fffffff);
    declPtr = declPtr == 0 ? heap.alloc(<usize>c) : heap.realloc(declPtr, <usize>c);
    declCap = c;
  }
  return declPtr + <usize>declLen;
}

/**
 * Planner declares an event's operations. The SDK passes one to the plan
 * handler; it is valid only during that call.
 *
 * An operation either writes one key (write: deterministic) or reads and
 * writes keys of one table that depend on values it reads (nonDet). Each
 * names the function that computes it (an index into the function list)
 * and carries an argument, the event's parameters, which its function
 * receives unchanged. The operations of an event run in declaration order,
 * each seeing the writes of those before it; an abort from any of them
 * aborts the event's transaction, undoing every write of it. Keys,
 * arguments and reads are copied during the call.
 */
export class Planner {
  /** The index of the event being planned in its batch. */
  event: u32 = 0;
  active: bool = false;
  err: string | null = null;

  /**
   * Declares a deterministic operation: function fn computes the new value
   * of key in table from that key's value and the values of reads, other
   * keys it reads (which order it after the earlier writers of those
   * keys).
   */
  write(table: u32, key: Bytes, fn: i32, arg: Bytes, reads: Array<Key> | null = null): void {
    this.declare(0, table, key, fn, arg, reads);
  }

  /**
   * Declares a non-deterministic operation over table: function fn may
   * read (Call.get) and write (Call.put, Call.delete) any key of table,
   * chosen from the values it reads, besides the declared reads (of any
   * table). The host orders it after every earlier and before every later
   * operation on table. It has no own key: its function's Effect counts
   * only when it is an abort or a failure.
   */
  nonDet(table: u32, fn: i32, arg: Bytes, reads: Array<Key> | null = null): void {
    this.declare(OP_FLAG_NONDET, table, new Bytes(), fn, arg, reads);
  }

  /**
   * Fails the batch with msg: for input the operator cannot plan at all.
   * A bad event that should just be skipped is better declared with no
   * operations and rejected by post.
   */
  fail(msg: string): void {
    if (this.err == null) this.err = "event " + this.event.toString() + ": " + msg;
  }

  private declare(flags: u32, table: u32, key: Bytes, fn: i32, arg: Bytes, reads: Array<Key> | null): void {
    if (!this.active) panic("sluice: Planner used outside the plan call it was passed to");
    if (<u32>fn >= <u32>funcs.length) {
      if (this.err == null) {
        this.err = "event " + this.event.toString() + ": operation names function " + fn.toString() +
          ", but the operator has " + funcs.length.toString() + " functions";
      }
      return;
    }
    let size = 28 + key.length + arg.length;
    const nr = reads == null ? 0 : reads.length;
    for (let i = 0; i < nr; i++) size += 8 + unchecked(reads![i]).key.length;
    let p = declReserve(size);
    store<u32>(p, this.event);
    store<u32>(p, <u32>fn, 4);
    store<u32>(p, flags, 8);
    store<u32>(p, table, 12);
    store<u32>(p, <u32>key.length, 16);
    memory.copy(p + 20, key.ptr, <usize>key.length);
    p += 20 + <usize>key.length;
    store<u32>(p, <u32>nr);
    p += 4;
    for (let i = 0; i < nr; i++) {
      const r = unchecked(reads![i]);
      store<u32>(p, r.table);
      store<u32>(p, <u32>r.key.length, 4);
      memory.copy(p + 8, r.key.ptr, <usize>r.key.length);
      p += 8 + <usize>r.key.length;
    }
    store<u32>(p, <u32>arg.length);
    memory.copy(p + 4, arg.ptr, <usize>arg.length);
    declLen += size;
  }
}

/** Implements sluice_plan over the events at [ptr, ptr+len). */
export function doPlan(ptr: usize, len: usize): i32 {
  if (kind != KIND_TXN || misuse != null) return notTxn("sluice_plan");
  if (misregistered()) return STATUS_ERROR;
  if (len < <usize>BATCH_HEADER_SIZE) {
    log(Level.Error, "input batch: " + batchError(ptr, <i32>len));
    return STATUS_ERROR;
  }
  const count = load<u32>(ptr);
  const end = ptr + len;
  declPtr = 0;
  declLen = 0;
  declCap = 0;
  const p = new Planner();
  const plan = planFn!;
  let off = ptr + BATCH_HEADER_SIZE;
  let ok = true;
  for (let i: u32 = 0; i < count; i++) {
    const next = decodeAt(off, end);
    if (next == 0) {
      off = 0;
      break;
    }
    const r = decodedRecord();
    p.event = i;
    p.active = true;
    plan(r, p);
    p.active = false;
    const err = p.err;
    if (err != null) {
      log(Level.Error, "plan: " + err);
      ok = false;
      break;
    }
    if (declLen >= FLUSH_SIZE) {
      host.txn_plan(declPtr, <usize>declLen);
      declLen = 0;
    }
    off = next;
  }
  if (ok && off != end) {
    log(Level.Error, "input batch: " + batchError(ptr, <i32>len));
    ok = false;
  }
  if (ok && declLen > 0) host.txn_plan(declPtr, <usize>declLen);
  declLen = 0;
  return ok ? STATUS_OK : STATUS_ERROR;
}

// ---- Apply ------------------------------------------------------------------

/**
 * Effect is what a function decides for its operation: write a value,
 * keep the key as it is, delete it, abort the event's transaction, or
 * fail. For a non-deterministic operation, whose writes are its put and
 * delete calls, only abort and fail count.
 */
export class Effect {
  constructor(
    /** An APPLY_* code, or STATUS_ERROR for a failure. */
    public code: i32,
    /** The value of a write. */
    public value: Bytes | null = null,
    /** The reason of a failure. */
    public err: string | null = null,
  ) {}

  /**
   * Stores v as the key's new value. v is copied by the host right after
   * the function returns: it may be bytes of the request, of Call.scratch,
   * or of the call's arena.
   */
  static write(v: Bytes): Effect {
    return new Effect(APPLY_WRITE, v);
  }

  /** Leaves the key unchanged: no version is written. */
  static keep(): Effect {
    return KEEP;
  }

  /** Deletes the key. */
  static delete(): Effect {
    return DELETE;
  }

  /**
   * Aborts the event's transaction: a condition failed. Every write of the
   * transaction is undone, its later operations do not run, and post sees
   * the event as not committed.
   */
  static abort(): Effect {
    return ABORT;
  }

  /**
   * Fails the operation with msg: not an abort but a fault (a value that
   * cannot be decoded, a refused access). It fails the whole batch, whose
   * error carries msg.
   */
  static fail(msg: string): Effect {
    return new Effect(STATUS_ERROR, null, msg);
  }
}

const KEEP = new Effect(APPLY_KEEP);
const DELETE = new Effect(APPLY_DELETE);
const ABORT = new Effect(APPLY_ABORT);

/**
 * Call is one execution of an operation, handed to its function: what the
 * operation is, the values it reads, and tracked access to state. It is
 * valid only during the function call, and so are the Bytes it holds and
 * returns, which alias the request and must not be modified: the SDK
 * reuses the Call, its key, arg and own value for the next operation.
 *
 * A function may run more than once for one operation, on any instance,
 * concurrently with others: it must be a deterministic function of what
 * the Call gives it, and keep nothing from one call to the next.
 */
export class Call {
  private _fn: u32 = 0;
  private _event: u32 = 0;
  private _op: u32 = 0;
  private _table: u32 = 0;
  private _nonDet: bool = false;
  private _key: Bytes = new Bytes();
  private _arg: Bytes = new Bytes();
  /** The reason the host refused an access, or null. */
  refusal: string | null = null;

  /** The index of the function called. */
  get fn(): u32 {
    return this._fn;
  }
  /** The index of the operation's event in its batch. */
  get event(): u32 {
    return this._event;
  }
  /** The operation's index among its event's operations. */
  get op(): u32 {
    return this._op;
  }
  /** The own key's table, or the table a non-deterministic operation is scoped to. */
  get table(): u32 {
    return this._table;
  }
  /** Whether the operation was declared with Planner.nonDet. */
  get nonDet(): bool {
    return this._nonDet;
  }
  /** The own key, the key the operation writes; empty for a non-deterministic one. */
  get key(): Bytes {
    return this._key;
  }
  /** The argument the operation was declared with. */
  get arg(): Bytes {
    return this._arg;
  }

  private ownFound: bool = false;
  private ownValue: Bytes = new Bytes();
  private nreads: i32 = 0;
  // The address of each declared read's table field in the request.
  private reads: usize = 0;
  private getPtr: usize = 0;
  private getCap: i32 = 0;
  private scratchPtr: usize = 0;
  private scratchCap: i32 = 0;

  /**
   * Returns the own key's value before the operation, or null when the
   * key does not exist. A non-deterministic operation has none (null).
   */
  own(): Bytes | null {
    return this.ownFound ? this.ownValue : null;
  }

  /** The number of declared reads. */
  get readCount(): i32 {
    return this.nreads;
  }

  /**
   * Returns the value of declared read i (in declaration order) as of the
   * operation's place in event order, or null when the key does not
   * exist. An index out of range is an access outside the declaration: it
   * returns null and fails the operation.
   */
  read(i: i32): Bytes | null {
    if (<u32>i >= <u32>this.nreads) {
      this.refuse("sluice: state access outside the operation's declaration: read index " + i.toString() +
        " of " + this.nreads.toString() + " declared reads");
      return null;
    }
    const p = load<usize>(this.reads + (<usize>i << alignof<usize>()));
    const v = p + 8 + <usize>load<u32>(p, 4);
    if (load<u32>(v) == 0) return null;
    return new Bytes(v + 8, <i32>load<u32>(v, 4));
  }

  /** Returns the table and key of declared read i, or null for an index out of range. */
  readKey(i: i32): Key | null {
    if (<u32>i >= <u32>this.nreads) return null;
    const p = load<usize>(this.reads + (<usize>i << alignof<usize>()));
    return new Key(load<u32>(p), new Bytes(p + 8, <i32>load<u32>(p, 4)));
  }

  /**
   * Returns the value of key in table as of the operation's place in event
   * order, or null when it does not exist. A deterministic operation may
   * get its own key and its declared reads; a non-deterministic one its
   * declared reads and any key of its table, and sees its own puts and
   * deletes. Anything else is refused: the result is null, refused turns
   * true and the operation fails whatever the function returns. The value
   * is valid until the next get of the call.
   */
  get(table: u32, key: Bytes): Bytes | null {
    if (this.getPtr == 0) {
      this.getCap = 256;
      this.getPtr = heap.alloc(256);
    }
    let n = host.txn_get(table, key.ptr, <usize>key.length, this.getPtr, <usize>this.getCap);
    if (n == STATUS_NOT_FOUND) return null;
    if (n == STATUS_UNDECLARED) {
      this.refused_("get", table, key);
      return null;
    }
    if (n < 0) panic("sluice: txn_get returned the unknown status " + n.toString());
    if (n > this.getCap) {
      this.getCap = n + n / 4;
      this.getPtr = heap.alloc(<usize>this.getCap);
      const m = host.txn_get(table, key.ptr, <usize>key.length, this.getPtr, <usize>this.getCap);
      if (m != n) panic("sluice: txn_get reported " + m.toString() + " bytes after a retry with a " + this.getCap.toString() + "-byte buffer");
    }
    return new Bytes(this.getPtr, n);
  }

  /**
   * Stores value for key in table: only a non-deterministic operation may,
   * and only in its table. Returns false when the host refused (see get).
   */
  put(table: u32, key: Bytes, value: Bytes): bool {
    return this.status("put", table, key, host.txn_put(table, key.ptr, <usize>key.length, value.ptr, <usize>value.length));
  }

  /** Deletes key in table, under put's rules. */
  delete(table: u32, key: Bytes): bool {
    return this.status("delete", table, key, host.txn_delete(table, key.ptr, <usize>key.length));
  }

  /** Reports whether the host refused an access of this call. */
  get refused(): bool {
    return this.refusal != null;
  }

  /**
   * Returns n bytes (of unspecified content) for building the value a
   * function writes: Effect.write(c.scratch(8)) after filling them. They
   * are valid until the function returns; the next scratch call of the
   * same function call may return the same bytes.
   */
  scratch(n: i32): Bytes {
    if (this.scratchCap < n) {
      this.scratchCap = max(n, 64);
      this.scratchPtr = heap.alloc(<usize>this.scratchCap);
    }
    return new Bytes(this.scratchPtr, n);
  }

  /**
   * Points the Call at the apply request [p, end), checking nothing but
   * what keeps the accessors inside it, and reports whether it is well
   * formed; the checked decoder explains a request refused here.
   */
  decode(p: usize, end: usize): bool {
    this.refusal = null;
    this.getPtr = 0;
    this.scratchCap = 0;
    if (end - p < 36) return false;
    this._fn = load<u32>(p, 8);
    this._event = load<u32>(p, 12);
    this._op = load<u32>(p, 16);
    const flags = load<u32>(p, 20);
    this._nonDet = (flags & OP_FLAG_NONDET) != 0;
    this.ownFound = (flags & APPLY_FLAG_OWN_FOUND) != 0;
    this._table = load<u32>(p, 24);
    let q = p + 28;
    let n = <usize>load<u32>(q);
    if (n > end - q - 8) return false; // the key, the own value's length
    this._key.ptr = q + 4;
    this._key.length = <i32>n;
    q += 4 + n;
    n = <usize>load<u32>(q);
    if (n > end - q - 8) return false; // the own value, the read count
    this.ownValue.ptr = q + 4;
    this.ownValue.length = <i32>n;
    q += 4 + n;
    const nr = load<u32>(q);
    q += 4;
    if (<u64>nr * 16 > <u64>(end - q)) return false;
    this.nreads = <i32>nr;
    if (nr > 0) {
      this.reads = nr <= READS_STATIC ? readsStatic : heap.alloc(<usize>nr << alignof<usize>());
      for (let i: u32 = 0; i < nr; i++) {
        store<usize>(this.reads + (<usize>i << alignof<usize>()), q);
        // table, key length, key, found, value length, value
        if (end - q < 16) return false;
        n = <usize>load<u32>(q, 4);
        if (n > end - q - 16) return false;
        q += 8 + n;
        if (load<u32>(q) > 1) return false;
        n = <usize>load<u32>(q, 4);
        if (n > end - q - 8) return false;
        q += 8 + n;
      }
    }
    if (end - q < 4) return false;
    n = <usize>load<u32>(q);
    if (n != end - q - 4) return false;
    this._arg.ptr = q + 4;
    this._arg.length = <i32>n;
    return true;
  }

  private status(what: string, table: u32, key: Bytes, st: i32): bool {
    if (st == STATUS_OK) return true;
    if (st == STATUS_UNDECLARED) {
      this.refused_(what, table, key);
      return false;
    }
    panic("sluice: txn_" + what + " returned the unknown status " + st.toString());
    return false;
  }

  private refused_(what: string, table: u32, key: Bytes): void {
    this.refuse("sluice: state access outside the operation's declaration: " + what + " of table " + table.toString() + " key " + quote(key));
  }

  private refuse(msg: string): void {
    if (this.refusal == null) this.refusal = msg;
  }
}

// The read addresses of a request with up to READS_STATIC declared reads
// live in static memory; more take arena memory.
// @ts-ignore: decorator
@inline const READS_STATIC: u32 = 64;
const readsStatic = memory.data(<i32>(READS_STATIC << alignof<usize>()));

// The Call handed to functions, reused from operation to operation: it is
// allocated when the module starts, so it outlives every call's arena.
const theCall = new Call();

// A bounds-checked reader of a transactional encoding: the first failure
// is kept with its offset.
class Reader {
  p: usize;
  err: string | null = null;
  errAt: usize = 0;
  constructor(public start: usize, public end: usize, p: usize) {
    this.p = p;
  }
  fail(reason: string): void {
    if (this.err == null) {
      this.err = reason;
      this.errAt = this.p - this.start;
    }
  }
  u32(name: string): u32 {
    if (this.err != null) return 0;
    if (this.end - this.p < 4) {
      this.fail("truncated " + name);
      return 0;
    }
    const v = load<u32>(this.p);
    this.p += 4;
    return v;
  }
  bytes(name: string): Bytes {
    if (this.err != null) return new Bytes();
    if (this.end - this.p < 4) {
      this.fail(name + " length exceeds the input");
      return new Bytes();
    }
    const n = <usize>load<u32>(this.p);
    if (n > this.end - this.p - 4) {
      this.fail(name + " length exceeds the input");
      return new Bytes();
    }
    const b = new Bytes(this.p + 4, <i32>n);
    this.p += 4 + n;
    return b;
  }
  count(name: string, minSize: u64): i32 {
    const n = this.u32(name);
    if (this.err == null && <u64>n * minSize > <u64>(this.end - this.p)) {
      this.p -= 4;
      this.fail(name + " " + n.toString() + " does not fit in the " + (this.end - this.p - 4).toString() + " bytes left");
      return 0;
    }
    return <i32>n;
  }
  flag(name: string): bool {
    const v = this.u32(name);
    if (v > 1 && this.err == null) {
      this.p -= 4;
      this.fail(name + " is " + v.toString() + ", want 0 or 1");
    }
    return v == 1;
  }
  // A found flag and bytes: null when not found.
  value(name: string): Bytes | null {
    const found = this.flag(name + " found flag");
    const b = this.bytes(name);
    return found ? b : null;
  }
  error(what: string): string {
    return "abi: malformed " + what + " at byte " + this.errAt.toString() + ": " + this.err!;
  }
}

/** Implements sluice_apply over the request at [ptr, ptr+len). */
export function doApply(ptr: usize, len: usize): i32 {
  if (kind != KIND_TXN || misuse != null) return notTxn("sluice_apply");
  if (misregistered()) return STATUS_ERROR;
  const c = theCall;
  if (!c.decode(ptr, ptr + len)) {
    log(Level.Error, "apply: " + applyError(ptr, len));
    return STATUS_ERROR;
  }
  if (c.fn >= <u32>funcs.length) {
    log(Level.Error, "apply: event " + c.event.toString() + " operation " + c.op.toString() + " names function " +
      c.fn.toString() + ", but the operator has " + funcs.length.toString() + " functions");
    return STATUS_ERROR;
  }
  const e = unchecked(funcs[c.fn])(c);
  const code = e.code;
  if (code == STATUS_ERROR || c.refusal != null) {
    let err = code == STATUS_ERROR ? e.err : null;
    if (err == null) err = c.refusal;
    if (err == null) err = "the function failed without a reason";
    log(Level.Error, "apply: event " + c.event.toString() + " operation " + c.op.toString() + ": function " +
      c.fn.toString() + " failed: " + err);
    return STATUS_ERROR;
  }
  if (code == APPLY_WRITE) {
    const v = e.value;
    store<u32>(ptr, v == null ? 0 : <u32>v.ptr);
    store<u32>(ptr, v == null ? 0 : <u32>v.length, 4);
  }
  return code;
}

// Explains why the apply request at [ptr, ptr+len) is malformed, with
// every check of abi.DecodeApplyRequest.
function applyError(ptr: usize, len: usize): string {
  const r = new Reader(ptr, ptr + len, ptr + <usize>APPLY_RESULT_SIZE);
  if (len < <usize>APPLY_RESULT_SIZE) {
    r.p = ptr;
    r.fail("shorter than the result slot");
  }
  r.u32("fn");
  r.u32("event");
  r.u32("op");
  r.u32("flags");
  r.u32("table");
  r.bytes("key");
  r.bytes("own value");
  const n = r.count("read count", 16);
  for (let i = 0; i < n && r.err == null; i++) {
    r.u32("read table");
    r.bytes("read key");
    r.value("read value");
  }
  r.bytes("argument");
  if (r.err == null && r.p != r.end) r.fail((r.end - r.p).toString() + " trailing bytes");
  if (r.err == null) return "abi: malformed apply request";
  return r.error("apply request");
}

// ---- Post -------------------------------------------------------------------

/** KeyValue is a key a non-deterministic operation read, and the value it saw (null: absent). */
export class KeyValue {
  constructor(public table: u32, public key: Bytes, public value: Bytes | null) {}
}

// The value encoded at p (found flag, length, bytes), or null when not found.
function valueAt(p: usize): Bytes | null {
  if (load<u32>(p) == 0) return null;
  return new Bytes(p + 8, <i32>load<u32>(p, 4));
}

// The address after the value encoded at p.
// @ts-ignore: decorator
@inline function afterValue(p: usize): usize {
  return p + 8 + <usize>load<u32>(p, 4);
}

/**
 * OpOutcome is what one operation of an event read, decoded from the
 * outcomes the host handed sluice_post as it is asked for. null means the
 * key did not exist. Valid only during the post call.
 */
export class OpOutcome {
  constructor(private at: usize) {}

  /**
   * Whether the operation ran: false for the operations after the one
   * that aborted its event.
   */
  get executed(): bool {
    return load<u32>(this.at) == 1;
  }

  /** The own key's value before the operation. */
  own(): Bytes | null {
    return valueAt(this.at + 4);
  }

  private readsAt(): usize {
    return afterValue(this.at + 4);
  }

  /** The number of declared reads. */
  get readCount(): i32 {
    return <i32>load<u32>(this.readsAt());
  }

  /** The value declared read i saw, or null (also for an index out of range). */
  read(i: i32): Bytes | null {
    let p = this.readsAt();
    if (<u32>i >= load<u32>(p)) return null;
    p += 4;
    for (let j = 0; j < i; j++) p = afterValue(p);
    return valueAt(p);
  }

  private getsAt(): usize {
    let p = this.readsAt();
    const n = load<u32>(p);
    p += 4;
    for (let j: u32 = 0; j < n; j++) p = afterValue(p);
    return p;
  }

  /**
   * The number of keys a non-deterministic operation read through
   * Call.get that are neither declared reads nor keys it wrote itself.
   */
  get getCount(): i32 {
    return <i32>load<u32>(this.getsAt());
  }

  /** Get i, in call order, or null for an index out of range. */
  get(i: i32): KeyValue | null {
    let p = this.getsAt();
    if (<u32>i >= load<u32>(p)) return null;
    p += 4;
    for (let j = 0; j < i; j++) p = afterValue(p + 8 + <usize>load<u32>(p, 4));
    const k = new Bytes(p + 8, <i32>load<u32>(p, 4));
    return new KeyValue(load<u32>(p), k, valueAt(p + 8 + <usize>k.length));
  }
}

/**
 * Outcome is one event's outcome, handed to the post handler: whether its
 * transaction committed and, per operation in declaration order, what it
 * read (op). The SDK reuses it from event to event; it is valid only
 * during the post call.
 */
export class Outcome {
  private _committed: bool = false;
  private n: i32 = 0;
  // The address of each operation's outcome.
  private ops: usize = 0;

  /** Whether the event's transaction committed. */
  get committed(): bool {
    return this._committed;
  }

  /** The number of operations the event declared. */
  get opCount(): i32 {
    return this.n;
  }

  /** What operation m (in declaration order) read; m must be below opCount. */
  op(m: i32): OpOutcome {
    if (<u32>m >= <u32>this.n) panic("sluice: Outcome.op(" + m.toString() + ") of " + this.n.toString() + " operations");
    return new OpOutcome(load<usize>(this.ops + (<usize>m << alignof<usize>())));
  }

  /**
   * Points the outcome at the event outcome encoded at [p, end), checking
   * all of it, and returns the address after it, or 0 when it is
   * malformed (the checked decoder explains why).
   */
  decode(p: usize, end: usize): usize {
    if (end - p < 8) return 0;
    const c = load<u32>(p);
    const n = load<u32>(p, 4);
    p += 8;
    if (c > 1 || <u64>n * 20 > <u64>(end - p)) return 0;
    this._committed = c == 1;
    this.n = <i32>n;
    this.ops = n <= OPS_STATIC ? opsStatic : heap.alloc(<usize>n << alignof<usize>());
    for (let m: u32 = 0; m < n; m++) {
      store<usize>(this.ops + (<usize>m << alignof<usize>()), p);
      if (end - p < 12 || load<u32>(p) > 1) return 0;
      p = checkValue(p + 4, end); // own
      if (p == 0 || end - p < 4) return 0;
      const nr = load<u32>(p);
      p += 4;
      if (<u64>nr * 8 > <u64>(end - p)) return 0;
      for (let i: u32 = 0; i < nr && p != 0; i++) p = checkValue(p, end);
      if (p == 0 || end - p < 4) return 0;
      const ng = load<u32>(p);
      p += 4;
      if (<u64>ng * 16 > <u64>(end - p)) return 0;
      for (let i: u32 = 0; i < ng && p != 0; i++) {
        if (end - p < 8) return 0;
        const kl = <usize>load<u32>(p, 4);
        if (kl > end - p - 8) return 0;
        p = checkValue(p + 8 + kl, end);
      }
      if (p == 0) return 0;
    }
    return p;
  }
}

// Checks the value encoded at p and returns the address after it, or 0.
function checkValue(p: usize, end: usize): usize {
  if (end - p < 8 || load<u32>(p) > 1) return 0;
  const n = <usize>load<u32>(p, 4);
  if (n > end - p - 8) return 0;
  return p + 8 + n;
}

// The operation addresses of an event with up to OPS_STATIC operations
// live in static memory; more take arena memory.
// @ts-ignore: decorator
@inline const OPS_STATIC: u32 = 64;
const opsStatic = memory.data(<i32>(OPS_STATIC << alignof<usize>()));

// The Outcome handed to post handlers, reused from event to event.
const theOutcome = new Outcome();

// Explains why the outcomes at [p, end) are malformed, as
// abi.OutcomeDecoder would.
function outcomesError(p: usize, end: usize): string {
  const r = new Reader(p, end, p);
  const n = r.count("event count", 8);
  for (let e = 0; e < n && r.err == null; e++) {
    r.flag("committed");
    const no = r.count("operation count", 20);
    for (let i = 0; i < no && r.err == null; i++) {
      r.flag("executed");
      r.value("own value");
      const nr = r.count("read count", 8);
      for (let j = 0; j < nr && r.err == null; j++) r.value("read value");
      const ng = r.count("get count", 16);
      for (let j = 0; j < ng && r.err == null; j++) {
        r.u32("get table");
        r.bytes("get key");
        r.value("get value");
      }
    }
  }
  if (r.err == null && r.p != r.end) r.fail((r.end - r.p).toString() + " trailing bytes after " + n.toString() + " events");
  if (r.err == null) return "abi: malformed outcomes";
  return r.error("outcomes");
}

/** Implements sluice_post over the events at [ev, ev+evLen) and their outcomes at [oc, oc+ocLen). */
export function doPost(ev: usize, evLen: usize, oc: usize, ocLen: usize): i32 {
  if (kind != KIND_TXN || misuse != null) return notTxn("sluice_post");
  if (misregistered()) return STATUS_ERROR;
  const post = postFn;
  if (post == null) return STATUS_OK; // nothing to emit
  if (evLen < <usize>BATCH_HEADER_SIZE) {
    log(Level.Error, "input batch: " + batchError(ev, <i32>evLen));
    return STATUS_ERROR;
  }
  const count = load<u32>(ev);
  const oend = oc + ocLen;
  if (ocLen < 4 || <u64>load<u32>(oc) * 8 > <u64>(ocLen - 4)) {
    log(Level.Error, "post: " + outcomesError(oc, oend));
    return STATUS_ERROR;
  }
  const n = load<u32>(oc);
  if (n != count) {
    log(Level.Error, "post: outcomes of " + n.toString() + " events for a batch of " + count.toString());
    return STATUS_ERROR;
  }
  outReset();
  const out = new Emitter();
  const o = theOutcome;
  const end = ev + evLen;
  let off = ev + BATCH_HEADER_SIZE;
  let op = oc + 4;
  for (let i: u32 = 0; i < count; i++) {
    const next = decodeAt(off, end);
    if (next == 0) {
      off = 0;
      break;
    }
    op = o.decode(op, oend);
    if (op == 0) break;
    const rec = decodedRecord();
    out.origin = i;
    const mark = outMark();
    const markCount = outMarkCount();
    handlerBegin();
    post(rec, o, out);
    const msg = handlerEnd();
    if (msg != null) {
      outRestore(mark, markCount);
      hostReject(i, msg);
    } else if (outFull()) {
      outFlush();
    }
    off = next;
  }
  if (off == 0 || (op != 0 && off != end)) {
    log(Level.Error, "input batch: " + batchError(ev, <i32>evLen));
    return STATUS_ERROR;
  }
  if (op != oend) {
    log(Level.Error, "post: " + outcomesError(oc, oend));
    return STATUS_ERROR;
  }
  outFlush();
  return STATUS_OK;
}
