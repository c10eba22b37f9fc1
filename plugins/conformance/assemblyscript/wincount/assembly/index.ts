// wincount: the conformance twin of plugins/wincount, an aggregate (abi/ABI.md
// section 13): per key and window, the number of records and the sum of
// their values, each a decimal integer (an optional '-', then digits,
// within int64); a record whose value is not one is rejected. The
// accumulator is 16 bytes, count and sum as little-endian 64-bit integers
// (the sum wraps around); a window's result is "count,sum" in decimal.

import { ByteBuffer, Bytes, Emitter, Record, Window, aggregate, reject } from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/window";

// Whether parse succeeded.
let parsed = false;

// parse reads a decimal int64 as Go's strconv.ParseInt(s, 10, 64) does,
// but for a leading '+', which it refuses.
function parse(s: Bytes): i64 {
  parsed = false;
  let i = 0;
  const neg = s.length > 0 && s[0] == 0x2d;
  if (neg) i = 1;
  if (i == s.length) return 0;
  let m: u64 = 0;
  for (; i < s.length; i++) {
    const d = <u64>(<u8>(s[i] - 0x30));
    if (d > 9) return 0;
    if (m > 922337203685477580 || (m == 922337203685477580 && d > 7 + (neg ? 1 : 0))) return 0;
    m = m * 10 + d;
  }
  parsed = true;
  return neg ? <i64>(0 - m) : <i64>m;
}

function add(acc: Bytes | null, r: Record): Bytes {
  const v = parse(r.value);
  if (!parsed) {
    reject("value is not a decimal integer");
    return new Bytes();
  }
  let a = acc;
  if (a == null || a.length != 16) {
    a = Bytes.alloc(16);
    store<u64>(a.ptr, 0);
    store<u64>(a.ptr, 0, 8);
  }
  store<u64>(a.ptr, load<u64>(a.ptr) + 1);
  store<u64>(a.ptr, load<u64>(a.ptr, 8) + <u64>v, 8);
  return a;
}

function merge(a: Bytes, b: Bytes): Bytes {
  store<u64>(a.ptr, load<u64>(a.ptr) + load<u64>(b.ptr));
  store<u64>(a.ptr, load<u64>(a.ptr, 8) + load<u64>(b.ptr, 8), 8);
  return a;
}

const buf = new ByteBuffer();

function fire(key: Bytes, w: Window, acc: Bytes, out: Emitter): void {
  buf.reset();
  buf.uint(load<u64>(acc.ptr));
  buf.byte(0x2c);
  buf.int(load<i64>(acc.ptr, 8));
  out.emitKV(key, buf.toBytes(), 0);
}

aggregate(add, merge, fire);
