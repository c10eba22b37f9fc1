// winmedian: the conformance twin of plugins/winmedian, a window function
// (abi/ABI.md section 13): the median of a window's values, each a decimal
// integer (an optional '-', then digits, within int64), in decimal: the
// middle value once sorted, the upper of the two middle values for an
// even count. A value that is not an integer dead-letters the whole window.

import { ByteBuffer, Bytes, Emitter, Record, Window, reject, windowFunc } from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/window";

let parsed = false;

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

const buf = new ByteBuffer();

function median(key: Bytes, w: Window, recs: Array<Record>, out: Emitter): void {
  const n = recs.length;
  if (n == 0) return;
  const vs = new Array<i64>(n);
  for (let i = 0; i < n; i++) {
    const v = parse(recs[i].value);
    if (!parsed) {
      reject("record " + i.toString() + ": value is not a decimal integer");
      return;
    }
    vs[i] = v;
  }
  // Insertion sort: windows of a conformance test are small.
  for (let i = 1; i < n; i++) {
    const x = vs[i];
    let j = i;
    while (j > 0 && vs[j - 1] > x) {
      vs[j] = vs[j - 1];
      j--;
    }
    vs[j] = x;
  }
  buf.reset();
  buf.int(vs[n >> 1]);
  out.emitKV(key, buf.toBytes(), 0);
}

windowFunc(median);
