// Join functions (abi/ABI.md section 14): the handler joinFunc registers,
// and the export sluice_join, which runs it over a call's pairs.

import { BATCH_HEADER_SIZE, JOIN_LEFT, JOIN_RIGHT, STATUS_ERROR, STATUS_OK } from "./abi";
import { Bytes } from "./bytes";
import {
  Emitter, KIND_JOIN, handlerBegin, handlerEnd, hostReject, outFlush, outFull, outMark, outMarkCount, outReset,
  outRestore, register,
} from "./core";
import { Level, log } from "./log";
import { Record } from "./record";
import { decodeAt, decodedInto, decodedRecord } from "./stream";
import { Window, malformed, windowOf, wrongKind } from "./window";

let joinFn: ((key: Bytes, w: Window | null, left: Record | null, right: Record | null, out: Emitter) => void) | null = null;

/**
 * Registers fn as a join's handler (kind: join): the host's join keeps
 * both inputs' records and finds the pairs with equal keys in a window or
 * an interval; fn builds each pair's results and emits them through out:
 * any number, zero included. left is the record of the join's first
 * input, right that of its second; one of them is null for an outer
 * join's record that matched nothing. w is the pair's window, null for an
 * interval join. The host stamps each result with the pair's time:
 * w.end - 1 for a window join, the later of the two records' times for an
 * interval join.
 *
 * reject(msg) dead-letters the pair (the result the join makes without a
 * plugin, a JSON object of the key and both values, with msg as its
 * error) and discards what fn emitted for it. key, left and right are valid
 * only during the call: the SDK reuses them for the next pair. fn must be
 * deterministic: the host calls it again with the same pair after a
 * failure or a recovery. Call it from the module's top level.
 */
export function joinFunc(fn: (key: Bytes, w: Window | null, left: Record | null, right: Record | null, out: Emitter) => void): void {
  if (register(KIND_JOIN, "joinFunc")) joinFn = fn;
}

// The key and records handed to the handler, reused from pair to pair
// (allocated when the module starts, so they outlive every call's arena).
const joinKey = new Bytes();
const leftKey = new Bytes();
const leftValue = new Bytes();
const leftRecord = new Record(leftKey, leftValue);
const rightKey = new Bytes();
const rightValue = new Bytes();
const rightRecord = new Record(rightKey, rightValue);

/** Implements sluice_join over the group batch at [ptr, ptr+len). */
export function doJoin(ptr: usize, len: usize): i32 {
  const ex = "sluice_join";
  if (wrongKind(ex, KIND_JOIN, "joinFunc")) return STATUS_ERROR;
  if (len < <usize>BATCH_HEADER_SIZE) return malformed(ex);
  const end = ptr + len;
  const pairs = load<u32>(ptr);
  let off = ptr + BATCH_HEADER_SIZE;
  const out = new Emitter();
  outReset();
  for (let j: u32 = 0; j < pairs; j++) {
    off = decodeAt(off, end);
    if (off == 0) return malformed(ex);
    const head = decodedRecord();
    let w: Window | null = null;
    if (head.headerCount > 0) {
      w = windowOf(head);
      if (w == null) {
        log(Level.Error, ex + ": pair " + j.toString() + " has headers that are not a window's");
        return STATUS_ERROR;
      }
    }
    const sides: u8 = head.value.length == 1 ? load<u8>(head.value.ptr) : 0;
    if (sides == 0 || (sides & ~(JOIN_LEFT | JOIN_RIGHT)) != 0) {
      log(Level.Error, ex + ": pair " + j.toString() + ": the head's value is not one byte of sides");
      return STATUS_ERROR;
    }
    joinKey.ptr = head.key.ptr;
    joinKey.length = head.key.length;
    if (end - off < 4) return malformed(ex);
    const n = load<u32>(off);
    off += 4;
    const want: u32 = ((sides & JOIN_LEFT) != 0 ? 1 : 0) + ((sides & JOIN_RIGHT) != 0 ? 1 : 0);
    if (n != want) {
      log(Level.Error, ex + ": pair " + j.toString() + " has " + n.toString() + " records, and its head says " + want.toString());
      return STATUS_ERROR;
    }
    let left: Record | null = null;
    let right: Record | null = null;
    if ((sides & JOIN_LEFT) != 0) {
      off = decodeAt(off, end);
      if (off == 0) return malformed(ex);
      left = decodedInto(leftRecord, leftKey, leftValue);
    }
    if ((sides & JOIN_RIGHT) != 0) {
      off = decodeAt(off, end);
      if (off == 0) return malformed(ex);
      right = decodedInto(rightRecord, rightKey, rightValue);
    }
    out.origin = j;
    const mark = outMark();
    const markCount = outMarkCount();
    handlerBegin();
    joinFn!(joinKey, w, left, right, out);
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
