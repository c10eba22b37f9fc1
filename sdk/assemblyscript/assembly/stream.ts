// Stateless and keyed operators: the handlers map, filter, flatMap and
// keyed register, and sluice_process, which runs them over a batch.

import * as host from "./host";
import { BATCH_HEADER_SIZE, DEFAULT_TABLE, FLAGS_INPUT, STATUS_ERROR, STATUS_OK } from "./abi";
import { Bytes } from "./bytes";
import {
  Emitter, KIND_AGGREGATE, KIND_FILTER, KIND_FLATMAP, KIND_JOIN, KIND_KEYED, KIND_MAP, KIND_NONE, KIND_TXN, KIND_WINDOW,
  handlerBegin, handlerEnd, kindName, servesWhat,
  hostReject, kind, misregistered, outFlush, outFull, outMark, outMarkCount, outRaw, outRecord, outReset, outRestore,
  register,
} from "./core";
import { Level, log } from "./log";
import { Header, Record } from "./record";
import { State } from "./state";

let mapFn: ((r: Record) => void) | null = null;
let filterFn: ((r: Record) => bool) | null = null;
let flatMapFn: ((r: Record, out: Emitter) => void) | null = null;
let keyedFn: ((r: Record, st: State, out: Emitter) => void) | null = null;

/**
 * Registers fn as a map operator's handler: it changes the record it is
 * given into the one output record, in place: its bytes (upper-case the
 * value), or its fields (r.value = newValue). reject(msg) dead-letters the
 * record instead. A record whose key, value and headers still view the
 * same bytes and whose time is unchanged is forwarded as it was encoded,
 * with whatever fn did to those bytes: no output encoding at all.
 * Call it from the module's top level.
 */
export function map(fn: (r: Record) => void): void {
  if (register(KIND_MAP, "map")) mapFn = fn;
}

/**
 * Registers fn as a filter operator's handler: a record is forwarded
 * unchanged when fn returns true and dropped when it returns false;
 * reject(msg) dead-letters it.
 */
export function filter(fn: (r: Record) => bool): void {
  if (register(KIND_FILTER, "filter")) filterFn = fn;
}

/**
 * Registers fn as a flatmap operator's handler: for each input record, fn
 * emits any number of output records through out. reject(msg) dead-letters
 * the record and discards what fn emitted for it.
 */
export function flatMap(fn: (r: Record, out: Emitter) => void): void {
  if (register(KIND_FLATMAP, "flatMap")) flatMapFn = fn;
}

/**
 * Registers fn as a keyed operator's handler: for each input record, st
 * reads and writes the state of the record's key, and out emits output
 * records. reject(msg) dead-letters the record and leaves no trace of it:
 * what fn emitted is discarded and the host undoes the state changes fn
 * made for it (it runs the rest of the batch again, one record per call,
 * to tell them apart: fn must be deterministic).
 */
export function keyed(fn: (r: Record, st: State, out: Emitter) => void): void {
  if (register(KIND_KEYED, "keyed")) keyedFn = fn;
}

// ---- Decoding ---------------------------------------------------------------

// The fields of the record decodeAt read last: key and value address and
// length, time, header count and the address of the first header.
let dKey: usize = 0;
let dKlen: i32 = 0;
let dVal: usize = 0;
let dVlen: i32 = 0;
let dTime: i64 = 0;
let dInput: i32 = 0;
let dNh: u32 = 0;
let dHdr: usize = 0;

/**
 * Decodes the record at off, which must end by end, into the d* fields
 * with every check of abi.Decoder, and returns the address after it, or 0
 * when it is malformed.
 */
export function decodeAt(off: usize, end: usize): usize {
  if (end - off < 32) return 0;
  const size = <usize>load<u32>(off);
  if (size < 28 || size > end - off - 4) return 0;
  // The SDK declares FEATURE_INPUTS: the flags hold the record's input
  // and no other bit.
  const flags = load<u32>(off, 8);
  if (flags > FLAGS_INPUT) return 0;
  const rend = off + 4 + size;
  const klen = <usize>load<u32>(off, 20);
  if (klen > size - 28) return 0;
  const vlen = <usize>load<u32>(off + klen, 24);
  if (vlen > size - 28 - klen) return 0;
  const nh = load<u32>(off + klen + vlen, 28);
  let p = off + 32 + klen + vlen;
  if (nh != 0) {
    if (<u64>nh * 8 > <u64>(rend - p)) return 0;
    dHdr = p;
    for (let j: u32 = 0; j < nh; j++) {
      if (rend - p < 4) return 0;
      const nl = <usize>load<u32>(p);
      if (nl > rend - p - 4) return 0;
      p += 4 + nl;
      if (rend - p < 4) return 0;
      const vl = <usize>load<u32>(p);
      if (vl > rend - p - 4) return 0;
      p += 4 + vl;
    }
  }
  if (p != rend) return 0;
  dKey = off + 24;
  dKlen = <i32>klen;
  dVal = off + 28 + klen;
  dVlen = <i32>vlen;
  dTime = load<i64>(off, 12);
  dInput = <i32>flags;
  dNh = nh;
  return rend;
}

// The Record handed to handlers and its key and value, reused from record
// to record (allocated when the module starts, so they outlive every
// call's arena). An allocation costs some 20 ns under wazero: a record
// decoded costs none unless it has headers.
const inKey = new Bytes();
const inValue = new Bytes();
const inRecord = new Record(inKey, inValue);

/**
 * Returns the input Record, pointed at the fields decodeAt read last. It is
 * the same object for every record of a call.
 */
export function decodedRecord(): Record {
  return decodedInto(inRecord, inKey, inValue);
}

/**
 * Points r at the fields decodeAt read last, through key and value, which
 * become its key and value, and returns it: for handlers given a few
 * records at once, each reused from call to call as decodedRecord's is.
 */
export function decodedInto(r: Record, key: Bytes, value: Bytes): Record {
  let hs: Array<Header> | null = null;
  if (dNh != 0) {
    hs = new Array<Header>(<i32>dNh);
    let p = dHdr;
    for (let j: i32 = 0; j < <i32>dNh; j++) {
      const nl = load<u32>(p);
      const name = new Bytes(p + 4, <i32>nl);
      p += 4 + <usize>nl;
      const vl = load<u32>(p);
      unchecked((hs[j] = new Header(name, new Bytes(p + 4, <i32>vl))));
      p += 4 + <usize>vl;
    }
  }
  key.ptr = dKey;
  key.length = dKlen;
  value.ptr = dVal;
  value.length = dVlen;
  r.reset(key, value, dTime, hs);
  r.input = dInput;
  return r;
}

/**
 * Returns a new Record of the fields decodeAt read last, with Bytes and
 * headers of its own: for handlers given many records at once.
 */
export function decodedRecordCopy(): Record {
  const r = decodedRecord();
  const c = new Record(new Bytes(dKey, dKlen), new Bytes(dVal, dVlen), dTime, r.headersOrNull);
  c.input = dInput;
  return c;
}

/** Reports whether r still views the headers decodeAt read last, unchanged. */
function headersForward(r: Record): bool {
  const hs = r.headersOrNull;
  if (dNh == 0) return hs == null || hs.length == 0;
  if (hs == null || hs.length != <i32>dNh) return false;
  let p = dHdr;
  for (let j = 0; j < hs.length; j++) {
    const h = unchecked(hs[j]);
    const nl = load<u32>(p);
    if (h.name.ptr != p + 4 || h.name.length != <i32>nl) return false;
    p += 4 + <usize>nl;
    const vl = load<u32>(p);
    if (h.value.ptr != p + 4 || h.value.length != <i32>vl) return false;
    p += 4 + <usize>vl;
  }
  return true;
}

/**
 * Explains why the batch at [ptr, ptr+len) is malformed, in abi.Decoder's
 * words where it can.
 */
export function batchError(ptr: usize, len: i32): string {
  if (len < BATCH_HEADER_SIZE) {
    return "abi: malformed batch header at byte 0: batch is " + len.toString() + " bytes, shorter than its 4-byte header";
  }
  const count = load<u32>(ptr);
  if (<u64>count * 32 > <u64>(len - BATCH_HEADER_SIZE)) {
    return "abi: malformed batch header at byte 0: count " + count.toString() + " does not fit in " + len.toString() + " bytes";
  }
  const end = ptr + <usize>len;
  let off = ptr + BATCH_HEADER_SIZE;
  for (let i: u32 = 0; i < count; i++) {
    const next = decodeAt(off, end);
    if (next == 0) {
      return "abi: malformed record " + i.toString() + " at byte " + (off - ptr).toString() + ": the record does not decode";
    }
    off = next;
  }
  if (off != end) {
    return "abi: malformed record " + count.toString() + " at byte " + (off - ptr).toString() + ": " +
      (end - off).toString() + " trailing bytes after the last of " + count.toString() + " records";
  }
  return "abi: malformed batch";
}

// ---- sluice_process ---------------------------------------------------------

/** Implements sluice_process over the batch at [ptr, ptr+len). */
export function doProcess(ptr: usize, len: usize): i32 {
  if (misregistered()) return STATUS_ERROR;
  switch (kind) {
    case KIND_NONE:
      log(Level.Error, "no handler registered: call map, filter, flatMap, keyed or transactional from the module's top level");
      return STATUS_ERROR;
    case KIND_TXN:
      log(Level.Error, "this plugin registers a transactional handler: it serves transactional operators (sluice_plan, sluice_apply, sluice_post), not sluice_process");
      return STATUS_ERROR;
    case KIND_AGGREGATE:
    case KIND_WINDOW:
      log(Level.Error, "this plugin registers a " + kindName + " handler: it serves " + servesWhat(kind) + " (abi/ABI.md section 13), not sluice_process");
      return STATUS_ERROR;
    case KIND_JOIN:
      log(Level.Error, "this plugin registers a " + kindName + " handler: it serves " + servesWhat(kind) + " (abi/ABI.md section 14), not sluice_process");
      return STATUS_ERROR;
  }
  if (len < <usize>BATCH_HEADER_SIZE) {
    log(Level.Error, "input batch: " + batchError(ptr, <i32>len));
    return STATUS_ERROR;
  }
  const count = load<u32>(ptr);
  outReset();
  const end = ptr + len;
  const last = kind == KIND_FLATMAP || kind == KIND_KEYED ? runEmitting(ptr, end, count) : runForwarding(ptr, end, count);
  if (last != end) {
    log(Level.Error, "input batch: " + batchError(ptr, <i32>len));
    return STATUS_ERROR;
  }
  outFlush();
  return STATUS_OK;
}

// The pending run of forwarded records: where it starts in the batch and
// the index of its first record.
let runStart: usize = 0;
let runFirst: u32 = 0;

/**
 * Ends the pending run of forwarded records before record i, which lies at
 * [at, next) and is not forwarded: the run joins the outputs in one copy.
 */
function endRun(at: usize, next: usize, i: u32): void {
  if (runFirst < i) {
    outRaw(runStart, <i32>(at - runStart), i - runFirst);
    if (outFull()) outFlush();
  }
  runStart = next;
  runFirst = i + 1;
}

/**
 * Runs a map or filter handler over the batch and returns the address
 * after its last record, or 0 when one is malformed. Records forwarded as
 * they are join the outputs in runs, one copy per run; a batch forwarded
 * whole is emitted where it lies, without any copy.
 */
function runForwarding(ptr: usize, end: usize, count: u32): usize {
  const mf = mapFn;
  const ff = filterFn;
  let off = ptr + BATCH_HEADER_SIZE;
  runStart = off;
  runFirst = 0;
  for (let i: u32 = 0; i < count; i++) {
    const next = decodeAt(off, end);
    if (next == 0) return 0;
    const r = decodedRecord();
    handlerBegin();
    let keep = true;
    if (mf != null) mf(r);
    else keep = ff!(r);
    const msg = handlerEnd();
    if (msg != null) {
      endRun(off, next, i);
      hostReject(i, msg);
    } else if (!keep) {
      endRun(off, next, i);
    } else if (
      mf == null ||
      (r.key.ptr == dKey && r.key.length == dKlen && r.value.ptr == dVal && r.value.length == dVlen && r.time == dTime && headersForward(r))
    ) {
      store<u32>(off, i, 4); // forwarded as it is, changed in place or not
    } else {
      endRun(off, next, i);
      outRecord(i, r);
      if (outFull()) outFlush();
    }
    off = next;
  }
  if (runFirst == 0 && off == end) {
    // Every record was forwarded: the batch is the output.
    if (count > 0) host.emit(ptr, end - ptr);
    return off;
  }
  endRun(off, off, count);
  return off;
}

/**
 * Runs a flatMap or keyed handler over the batch and returns the address
 * after its last record, or 0 when one is malformed. The outputs of a
 * rejected record are discarded: flushes happen only between records.
 */
// The State handed to keyed handlers, and its key, reused likewise.
const stateKey = new Bytes();
const inState = new State(DEFAULT_TABLE, stateKey);

function runEmitting(ptr: usize, end: usize, count: u32): usize {
  const out = new Emitter();
  const kf = keyedFn;
  const ff = flatMapFn;
  let off = ptr + BATCH_HEADER_SIZE;
  for (let i: u32 = 0; i < count; i++) {
    const next = decodeAt(off, end);
    if (next == 0) return 0;
    const r = decodedRecord();
    out.origin = i;
    const mark = outMark();
    const markCount = outMarkCount();
    handlerBegin();
    if (kf != null) {
      stateKey.ptr = dKey;
      stateKey.length = dKlen;
      inState.handle = DEFAULT_TABLE;
      inState.key = stateKey;
      kf(r, inState, out);
    }
    else ff!(r, out);
    const msg = handlerEnd();
    if (msg != null) {
      outRestore(mark, markCount);
      hostReject(i, msg);
    } else if (outFull()) {
      outFlush();
    }
    off = next;
  }
  return off;
}
