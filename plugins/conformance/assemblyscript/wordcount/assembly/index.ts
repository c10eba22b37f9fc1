// wordcount: the conformance twin of plugins/wordcount. A keyed operator
// that counts the records of each key: the count is kept in the default
// table as ASCII decimal, and each record emits its key with the new count
// (the record's time, no headers). A stored count that is not a decimal
// number dead-letters the record with the message the Go plugin gives.

import { ByteBuffer, Bytes, Emitter, Record, State, keyed, quote, reject } from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/stream";

// The reason parseCount failed, or null.
let parseError: string | null = null;

// parseCount reads a count written by the operator: one or more ASCII
// digits, at most 2^64-1. It checks each byte as Go's parseCount does, a
// non-digit before an overflow, so that the same input fails the same way.
function parseCount(b: Bytes): u64 {
  parseError = null;
  if (b.length == 0) {
    parseError = "empty, want a decimal number";
    return 0;
  }
  let n: u64 = 0;
  for (let i = 0; i < b.length; i++) {
    const d = <u64>(<u8>(b[i] - 0x30));
    if (d > 9) {
      parseError = quote(b) + " is not a decimal number";
      return 0;
    }
    if (n > (u64.MAX_VALUE - d) / 10) {
      parseError = quote(b) + " is out of range";
      return 0;
    }
    n = n * 10 + d;
  }
  return n;
}

// The new count, formatted: reused from record to record (the SDK notices
// when an earlier call's arena released its storage).
const buf = new ByteBuffer();

function count(r: Record, st: State, out: Emitter): void {
  let n: u64 = 0;
  const v = st.get();
  if (v != null) {
    n = parseCount(v);
    const err = parseError;
    if (err != null) {
      reject("stored count of key " + quote(r.key) + ": " + err);
      return;
    }
  }
  buf.reset();
  buf.uint(n + 1);
  const c = buf.toBytes();
  st.put(c);
  out.emitKV(r.key, c, r.time);
}

keyed(count);
