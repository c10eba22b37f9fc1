// Window functions (abi/ABI.md section 13): the handlers aggregate and
// windowFunc register, and the exports sluice_agg_add, sluice_agg_merge,
// sluice_agg_fire and sluice_window_fire, which run them over a call's
// groups, pairs or firings.

import { BATCH_HEADER_SIZE, STATUS_ERROR, STATUS_OK } from "./abi";
import { Bytes } from "./bytes";
import {
  Emitter, KIND_AGGREGATE, KIND_WINDOW, handlerBegin, handlerEnd, hostReject, kind, kindName, misregistered,
  outFlush, outFull, outMark, outMarkCount, outRecord, outReset, outRestore, register, servesWhat,
} from "./core";
import { Level, log } from "./log";
import { Record } from "./record";
import { decodeAt, decodedRecord, decodedRecordCopy } from "./stream";

/** Firings of a window: why it fires. */
export const FIRING_ON_TIME: i32 = 0;
export const FIRING_EARLY: i32 = 1;
export const FIRING_LATE: i32 = 2;

/**
 * Window is a firing window [start, end), in ns since the Unix epoch, and
 * why it fires (FIRING_*). The host stamps its results with end - 1.
 */
export class Window {
  constructor(public start: i64 = 0, public end: i64 = 0, public firing: i32 = FIRING_ON_TIME) {}
}

let addFn: ((acc: Bytes | null, r: Record) => Bytes) | null = null;
let mergeFn: ((a: Bytes, b: Bytes) => Bytes) | null = null;
let fireFn: ((key: Bytes, w: Window, acc: Bytes, out: Emitter) => void) | null = null;
let windowFn: ((key: Bytes, w: Window, recs: Array<Record>, out: Emitter) => void) | null = null;

/**
 * Registers an aggregate operator (kind: aggregate): the host keeps an
 * accumulator per key and window, bytes of the operator's encoding of at
 * least one byte. add folds r into acc (null when the window has none yet)
 * and returns the new accumulator (it may change acc's bytes and return
 * it); reject(msg) dead-letters r, which is then not folded. merge returns
 * the accumulator of both a and b. fire emits the results of key's window
 * w from its accumulator through out; reject(msg) dead-letters the firing.
 * Call it from the module's top level.
 */
export function aggregate(
  add: (acc: Bytes | null, r: Record) => Bytes,
  merge: (a: Bytes, b: Bytes) => Bytes,
  fire: (key: Bytes, w: Window, acc: Bytes, out: Emitter) => void,
): void {
  if (register(KIND_AGGREGATE, "aggregate")) {
    addFn = add;
    mergeFn = merge;
    fireFn = fire;
  }
}

/**
 * Registers a window function (kind: window): when key's window w fires,
 * fn receives all its records, in arrival order, and emits its results
 * through out. reject(msg) dead-letters every record of the window and
 * discards what fn emitted. Call it from the module's top level.
 */
export function windowFunc(fn: (key: Bytes, w: Window, recs: Array<Record>, out: Emitter) => void): void {
  if (register(KIND_WINDOW, "windowFunc")) windowFn = fn;
}

/**
 * Logs why export cannot run and returns true, unless the handler is of
 * kind k, which the function registrar registers.
 */
export function wrongKind(export_: string, k: i32, registrar: string): bool {
  if (misregistered()) return true;
  if (kind == k) return false;
  if (kindName == "") {
    log(Level.Error, "no handler registered: call " + registrar + " from the module's top level");
  } else {
    log(Level.Error, export_ + " called, but this plugin registers a " + kindName + " handler: it serves " + servesWhat(kind));
  }
  return true;
}

/** Logs that export's input is malformed and returns STATUS_ERROR. */
export function malformed(export_: string): i32 {
  log(Level.Error, export_ + ": malformed input");
  return STATUS_ERROR;
}

// The accumulator record emitted, reused.
const accKey = new Bytes();
const accRecord = new Record(accKey, new Bytes());

function emitAcc(origin: u32, acc: Bytes): void {
  accRecord.value = acc;
  outRecord(origin, accRecord);
  if (outFull()) outFlush();
}

/** Reads a window from the headers of r, or returns null. */
export function windowOf(r: Record): Window | null {
  const s = r.header("sluice-window-start");
  const e = r.header("sluice-window-end");
  const f = r.header("sluice-firing");
  if (s == null || e == null || f == null || s.length != 8 || e.length != 8) return null;
  let firing: i32;
  if (f.equalsString("on-time")) firing = FIRING_ON_TIME;
  else if (f.equalsString("early")) firing = FIRING_EARLY;
  else if (f.equalsString("late")) firing = FIRING_LATE;
  else return null;
  return new Window(load<i64>(s.ptr), load<i64>(e.ptr), firing);
}

/** Implements sluice_agg_add over the group batch at [ptr, ptr+len). */
export function doAggAdd(ptr: usize, len: usize): i32 {
  const ex = "sluice_agg_add";
  if (wrongKind(ex, KIND_AGGREGATE, "aggregate")) return STATUS_ERROR;
  if (len < <usize>BATCH_HEADER_SIZE) return malformed(ex);
  const end = ptr + len;
  const groups = load<u32>(ptr);
  let off = ptr + BATCH_HEADER_SIZE;
  let member: u32 = 0;
  outReset();
  for (let g: u32 = 0; g < groups; g++) {
    off = decodeAt(off, end);
    if (off == 0) return malformed(ex);
    const head = decodedRecord();
    let acc: Bytes | null = head.value.length == 0 ? null : new Bytes(head.value.ptr, head.value.length);
    if (end - off < 4) return malformed(ex);
    const n = load<u32>(off);
    off += 4;
    for (let k: u32 = 0; k < n; k++, member++) {
      off = decodeAt(off, end);
      if (off == 0) return malformed(ex);
      const r = decodedRecord();
      handlerBegin();
      const next = addFn!(acc, r);
      const msg = handlerEnd();
      if (msg != null) {
        hostReject(member, msg);
      } else if (next.length == 0) {
        log(Level.Error, ex + ": add returned an empty accumulator for record " + member.toString() + ": an accumulator takes at least one byte");
        return STATUS_ERROR;
      } else {
        acc = next;
      }
    }
    emitAcc(g, acc == null ? new Bytes() : acc);
  }
  if (off != end) return malformed(ex);
  outFlush();
  return STATUS_OK;
}

/** Implements sluice_agg_merge over the batch of pairs at [ptr, ptr+len). */
export function doAggMerge(ptr: usize, len: usize): i32 {
  const ex = "sluice_agg_merge";
  if (wrongKind(ex, KIND_AGGREGATE, "aggregate")) return STATUS_ERROR;
  if (len < <usize>BATCH_HEADER_SIZE) return malformed(ex);
  const end = ptr + len;
  const n = load<u32>(ptr);
  if (n % 2 != 0) return malformed(ex);
  let off = ptr + BATCH_HEADER_SIZE;
  outReset();
  for (let j: u32 = 0; j < n / 2; j++) {
    off = decodeAt(off, end);
    if (off == 0) return malformed(ex);
    let r = decodedRecord();
    const a = new Bytes(r.value.ptr, r.value.length);
    off = decodeAt(off, end);
    if (off == 0) return malformed(ex);
    r = decodedRecord();
    const m = mergeFn!(a, new Bytes(r.value.ptr, r.value.length));
    if (m.length == 0) {
      log(Level.Error, ex + ": merge returned an empty accumulator for pair " + j.toString());
      return STATUS_ERROR;
    }
    emitAcc(j, m);
  }
  if (off != end) return malformed(ex);
  outFlush();
  return STATUS_OK;
}

/** Implements sluice_agg_fire over the batch of firings at [ptr, ptr+len). */
export function doAggFire(ptr: usize, len: usize): i32 {
  const ex = "sluice_agg_fire";
  if (wrongKind(ex, KIND_AGGREGATE, "aggregate")) return STATUS_ERROR;
  if (len < <usize>BATCH_HEADER_SIZE) return malformed(ex);
  const end = ptr + len;
  const n = load<u32>(ptr);
  let off = ptr + BATCH_HEADER_SIZE;
  const out = new Emitter();
  outReset();
  for (let j: u32 = 0; j < n; j++) {
    off = decodeAt(off, end);
    if (off == 0) return malformed(ex);
    const r = decodedRecord();
    const w = windowOf(r);
    if (w == null) return malformed(ex);
    out.origin = j;
    const mark = outMark();
    const markCount = outMarkCount();
    handlerBegin();
    fireFn!(new Bytes(r.key.ptr, r.key.length), w, new Bytes(r.value.ptr, r.value.length), out);
    const msg = handlerEnd();
    if (msg != null) {
      outRestore(mark, markCount);
      hostReject(j, msg);
    } else if (outFull()) {
      outFlush();
    }
  }
  if (off != end) return malformed(ex);
  outFlush();
  return STATUS_OK;
}

/** Implements sluice_window_fire over the group batch at [ptr, ptr+len). */
export function doWindowFire(ptr: usize, len: usize): i32 {
  const ex = "sluice_window_fire";
  if (wrongKind(ex, KIND_WINDOW, "windowFunc")) return STATUS_ERROR;
  if (len < <usize>BATCH_HEADER_SIZE) return malformed(ex);
  const end = ptr + len;
  const groups = load<u32>(ptr);
  let off = ptr + BATCH_HEADER_SIZE;
  let member: u32 = 0;
  const out = new Emitter();
  outReset();
  for (let g: u32 = 0; g < groups; g++) {
    off = decodeAt(off, end);
    if (off == 0) return malformed(ex);
    const head = decodedRecord();
    const w = windowOf(head);
    if (w == null) return malformed(ex);
    const key = new Bytes(head.key.ptr, head.key.length);
    if (end - off < 4) return malformed(ex);
    const n = load<u32>(off);
    off += 4;
    const recs = new Array<Record>();
    for (let k: u32 = 0; k < n; k++) {
      off = decodeAt(off, end);
      if (off == 0) return malformed(ex);
      recs.push(decodedRecordCopy());
    }
    out.origin = g;
    const mark = outMark();
    const markCount = outMarkCount();
    handlerBegin();
    windowFn!(key, w, recs, out);
    const msg = handlerEnd();
    if (msg != null) {
      outRestore(mark, markCount);
      for (let k: u32 = 0; k < n; k++) hostReject(member + k, msg);
    } else if (outFull()) {
      outFlush();
    }
    member += n;
  }
  if (off != end) return malformed(ex);
  outFlush();
  return STATUS_OK;
}
