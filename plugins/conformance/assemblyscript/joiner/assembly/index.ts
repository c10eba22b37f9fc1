// joiner: the conformance twin of plugins/joiner, a join function
// (abi/ABI.md section 14): for each pair, one record with the pair's key
// and the value "L|R", L the left record's value and R the right one's
// ("-" for a side an outer join left empty), and, for a window join, a
// header "window" holding the window's start and end as two 8-byte
// little-endian integers. A left value "twice" emits the result twice, a
// left value "none" emits nothing, and a value "bad" on either side
// dead-letters the pair with the error "bad value in pair".

import { ByteBuffer, Bytes, Emitter, Header, Record, Window, joinFunc, reject } from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/join";

const absent = Bytes.fromString("-");
const windowName = Bytes.fromString("window");

function join(key: Bytes, w: Window | null, left: Record | null, right: Record | null, out: Emitter): void {
  const l = left != null ? left.value : absent;
  const r = right != null ? right.value : absent;
  if (l.equalsString("bad") || r.equalsString("bad")) {
    reject("bad value in pair");
    return;
  }
  if (left != null && l.equalsString("none")) return;
  const res = new Record(key, new ByteBuffer(l.length + 1 + r.length).bytes(l).byte(0x7c).bytes(r).toBytes());
  if (w != null) {
    const span = new ByteBuffer(16).u64le(<u64>w.start).u64le(<u64>w.end).toBytes();
    res.headers = [new Header(windowName, span)];
  }
  out.emit(res);
  if (left != null && l.equalsString("twice")) out.emit(res);
}

joinFunc(join);
