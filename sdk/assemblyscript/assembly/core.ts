// The guest core shared by every kind of operator: which handler the
// operator registered, the output batch and the Emitter that fills it,
// rejects, and sluice_configure.

import * as host from "./host";
import {
  BATCH_HEADER_SIZE, KIND_BIT_AGGREGATE, KIND_BIT_FILTER, KIND_BIT_FLATMAP, KIND_BIT_KEYED, KIND_BIT_MAP,
  KIND_BIT_JOIN, KIND_BIT_TRANSACTIONAL, KIND_BIT_WINDOW,
  STATUS_BAD_CONFIG, STATUS_OK,
} from "./abi";
import { Bytes } from "./bytes";
import { endConfigure } from "./arena";
import { Level, log, panic } from "./log";
import { Record, writeRecord } from "./record";
import { decodeRune } from "./utf8";

// Kinds of handler.
export const KIND_NONE: i32 = 0;
export const KIND_MAP: i32 = 1;
export const KIND_FILTER: i32 = 2;
export const KIND_FLATMAP: i32 = 3;
export const KIND_KEYED: i32 = 4;
export const KIND_TXN: i32 = 5;
export const KIND_AGGREGATE: i32 = 6;
export const KIND_WINDOW: i32 = 7;
export const KIND_JOIN: i32 = 8;

/** The kind of handler registered, one of KIND_*. */
export let kind: i32 = KIND_NONE;
/** The registering function's name, for messages. */
export let kindName = "";
// The first misuse of the registration functions, reported by the first
// call: a message logged while the module starts would have no call to
// fail.
let registrationError: string | null = null;

/** Names the operator kinds a handler kind serves, for messages. */
export function servesWhat(k: i32): string {
  switch (k) {
    case KIND_MAP: return "map operators";
    case KIND_FILTER: return "filter operators";
    case KIND_FLATMAP: return "flatmap operators";
    case KIND_KEYED: return "keyed operators";
    case KIND_TXN: return "transactional operators";
    case KIND_AGGREGATE: return "aggregate operators";
    case KIND_WINDOW: return "window operators";
    case KIND_JOIN: return "join operators";
  }
  return "no operator";
}

/**
 * Records that the function name registers a handler of kind k, or the
 * misuse that forbids it.
 */
export function register(k: i32, name: string): bool {
  if (kind != KIND_NONE) {
    if (registrationError == null) {
      registrationError = name + " called, but " + kindName + " already registered a handler; an operator registers exactly one";
    }
    return false;
  }
  kind = k;
  kindName = name;
  return true;
}

/**
 * Logs the registration misuse, if any, and reports whether there was
 * one: every export fails then.
 */
export function misregistered(): bool {
  const e = registrationError;
  if (e == null) return false;
  log(Level.Error, e);
  return true;
}

/**
 * Returns the bit of the operator kind the registered handler serves, for
 * sluice_kinds (from which `sluice plugin build` writes the module's
 * sluice.kinds section), or 0 after logging why when no handler, or more
 * than one, is registered.
 */
export function kindBits(): i32 {
  if (misregistered()) return 0;
  switch (kind) {
    case KIND_MAP: return KIND_BIT_MAP;
    case KIND_FILTER: return KIND_BIT_FILTER;
    case KIND_FLATMAP: return KIND_BIT_FLATMAP;
    case KIND_KEYED: return KIND_BIT_KEYED;
    case KIND_TXN: return KIND_BIT_TRANSACTIONAL;
    case KIND_AGGREGATE: return KIND_BIT_AGGREGATE;
    case KIND_WINDOW: return KIND_BIT_WINDOW;
    case KIND_JOIN: return KIND_BIT_JOIN;
  }
  log(Level.Error, "no handler registered: call map, filter, flatMap, keyed, transactional, aggregate, windowFunc or joinFunc from the module's top level");
  return 0;
}

// ---- Output records ------------------------------------------------------

/** Outputs gathered past this size are emitted before the next input record. */
export const FLUSH_SIZE: i32 = 1 << 20;
const INITIAL_OUT: i32 = 64 << 10;

// The output batch being gathered, in the call's arena: its address (0
// until the first output of a call), length (header included), capacity
// and record count.
let outPtr: usize = 0;
let outLen: i32 = 0;
let outCap: i32 = 0;
let outCount: u32 = 0;

/** Starts a call's outputs: nothing gathered yet. */
export function outReset(): void {
  outPtr = 0;
  outLen = 0;
  outCap = 0;
  outCount = 0;
}

/** Returns the address where n more output bytes go, growing the batch. */
function outReserve(n: i32): usize {
  if (outPtr == 0) {
    const c = max(INITIAL_OUT, n + BATCH_HEADER_SIZE);
    outPtr = heap.alloc(<usize>c);
    outCap = c;
    outLen = BATCH_HEADER_SIZE;
  }
  if (outCap - outLen < n) {
    const need = <i64>outLen + <i64>n;
    if (need > 0x7fffffff) panic("sluice: output batch over 2 GiB");
    const c = <i32>min<i64>(max<i64>(need, <i64>outCap * 2), 0x7fffffff);
    outPtr = heap.realloc(outPtr, <usize>c);
    outCap = c;
  }
  return outPtr + <usize>outLen;
}

/** Appends the encoding of r as an output of input origin. */
export function outRecord(origin: u32, r: Record): void {
  const size = r.encodedSize();
  const p = outReserve(size);
  writeRecord(p, origin, r, size);
  outLen += size;
  outCount++;
}

/** Appends count encoded records, n bytes at p, as they are. */
export function outRaw(p: usize, n: i32, count: u32): void {
  const d = outReserve(n);
  memory.copy(d, p, <usize>n);
  outLen += n;
  outCount += count;
}

/** Returns the length of the outputs gathered, for outRestore. */
export function outMark(): i32 {
  return outLen;
}

/** Returns the number of outputs gathered, for outRestore. */
export function outMarkCount(): u32 {
  return outCount;
}

/** Discards the outputs gathered after a mark. */
export function outRestore(len: i32, count: u32): void {
  outLen = len;
  outCount = count;
}

/** Reports whether the outputs gathered reach the flush size. */
export function outFull(): bool {
  return outLen >= FLUSH_SIZE;
}

/** Hands the gathered outputs to the host, if any, and starts a new batch. */
export function outFlush(): void {
  if (outCount == 0) return;
  store<u32>(outPtr, outCount);
  host.emit(outPtr, <usize>outLen);
  outLen = BATCH_HEADER_SIZE;
  outCount = 0;
}

/**
 * Emitter sends a handler's output records to the host. The SDK passes one
 * to flatMap, keyed, post, fire, window and join handlers; it is valid only
 * during that call.
 */
export class Emitter {
  /** The index of the input record (or event, firing or pair) being handled. */
  origin: u32 = 0;

  /**
   * Encodes r into the output batch at once, so r's bytes may change or be
   * reused right after the call. The output's origin is the record being
   * handled.
   */
  emit(r: Record): void {
    outRecord(this.origin, r);
  }

  /** Emits a record with key, value and time, and no headers. */
  emitKV(key: Bytes, value: Bytes, time: i64): void {
    const size = 32 + key.length + value.length;
    const p = outReserve(size);
    store<u32>(p, <u32>(size - 4));
    store<u32>(p, this.origin, 4);
    store<u32>(p, 0, 8);
    store<i64>(p, time, 12);
    store<u32>(p, <u32>key.length, 20);
    memory.copy(p + 24, key.ptr, <usize>key.length);
    const q = p + 24 + <usize>key.length;
    store<u32>(q, <u32>value.length);
    memory.copy(q + 4, value.ptr, <usize>value.length);
    store<u32>(q + 4 + <usize>value.length, 0);
    outLen += size;
    outCount++;
  }
}

// ---- Rejects --------------------------------------------------------------

// Whether a handler is running, and the reject message it gave, if any.
let inHandler = false;
let rejectMsg: string | null = null;

/** Marks the start of a handler call that may reject its record. */
export function handlerBegin(): void {
  inHandler = true;
  rejectMsg = null;
}

/** Marks the end of a handler call and returns its reject message, or null. */
export function handlerEnd(): string | null {
  inHandler = false;
  const m = rejectMsg;
  rejectMsg = null;
  return m;
}

/**
 * Dead-letters the record (or, in a transactional post handler, the
 * event) being handled, with msg: what the handler emitted for it is
 * discarded, and in a keyed operator the host undoes its state changes.
 * The handler should return right after; the batch goes on with the next
 * record. Only the first reject of a record counts. Calling it outside a
 * handler traps.
 */
export function reject(msg: string): void {
  if (!inHandler) panic("sluice: reject called outside a record handler");
  if (rejectMsg == null) rejectMsg = msg;
}

/** Hands the host the reject of input record origin. */
export function hostReject(origin: u32, msg: string): void {
  const b = Bytes.fromString(msg);
  host.reject(origin, b.ptr, <usize>b.length);
}

// ---- Configuration --------------------------------------------------------

let configureFn: ((config: Bytes) => string | null) | null = null;

/**
 * Registers fn to receive the operator's `config` from the pipeline file,
 * encoded as JSON, once per instance before the first record. When the
 * pipeline gives none, fn receives the JSON text null. fn returns null to
 * accept the configuration, or the reason it is invalid: the host then
 * refuses to start the operator and reports the reason.
 *
 * What fn allocates (the parsed configuration, kept in module globals)
 * lives as long as the instance, and so do the configuration bytes.
 * Without a configure handler the operator accepts only an absent or empty
 * configuration (null or {}). Call it from the module's top level.
 */
export function configure(fn: (config: Bytes) => string | null): void {
  if (configureFn != null) {
    if (registrationError == null) registrationError = "configure called twice; an operator registers at most one configuration handler";
    return;
  }
  configureFn = fn;
}

/** Implements sluice_configure. */
export function doConfigure(ptr: usize, len: usize): i32 {
  if (misregistered()) {
    endConfigure();
    return STATUS_BAD_CONFIG;
  }
  let config = new Bytes(ptr, <i32>len);
  const trimmed = trimSpace(config);
  const fn = configureFn;
  let status = STATUS_OK;
  if (fn == null) {
    if (trimmed.length != 0 && !trimmed.equalsString("null") && !trimmed.equalsString("{}")) {
      log(Level.Error, "invalid configuration: this operator takes no configuration (it registers no sluice.Configure handler)");
      status = STATUS_BAD_CONFIG;
    }
  } else {
    // The handler always sees valid JSON.
    if (trimmed.length == 0) config = Bytes.fromString("null");
    const err = fn(config);
    if (err != null) {
      log(Level.Error, "invalid configuration: " + err);
      status = STATUS_BAD_CONFIG;
    }
  }
  endConfigure();
  return status;
}

/** Reports whether r is white space by Go's unicode.IsSpace. */
export function isUnicodeSpace(r: i32): bool {
  if (r <= 0xff) return r == 0x20 || (r >= 0x09 && r <= 0x0d) || r == 0x85 || r == 0xa0;
  return r == 0x1680 || (r >= 0x2000 && r <= 0x200a) || r == 0x2028 || r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000;
}

/** Returns b without leading and trailing Unicode white space, as Go's bytes.TrimSpace. */
export function trimSpace(b: Bytes): Bytes {
  let p = b.ptr;
  let end = b.ptr + <usize>b.length;
  while (p < end) {
    const rw = decodeRune(p, end);
    if (!isUnicodeSpace(<i32>rw)) break;
    p += <usize>(rw >>> 32);
  }
  // From the end: step back over one rune at a time.
  while (end > p) {
    let s = end - 1;
    while (s > p && end - s < 4 && (load<u8>(s) & 0xc0) == 0x80) s--;
    const rw = decodeRune(s, end);
    if (<usize>(rw >>> 32) != end - s) {
      // Not a whole rune ending at end: the last byte alone is invalid.
      break;
    }
    if (!isUnicodeSpace(<i32>rw)) break;
    end = s;
  }
  return new Bytes(p, <i32>(end - p));
}
