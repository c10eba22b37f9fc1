// Test operator (join): for each pair, one result with the pair's key and
// the value "<window> <left>|<right>", <window> "start..end/firing" or
// "interval" and each side "value@time#input" or "-", carrying the left
// record's headers and then the right one's. What a value asks for:
//   reject  (either side) emit, then reject with "rejected pair <key>"
//   none    (left) emit nothing
//   twice   (left) emit the result twice
//   mutate  (left) replace the left record's value and time, and emit it
//   big     (left) emit a 3 MiB value (the outputs are flushed)
//   heap    (left) emit the heap top, in decimal
//   trap    (left) trap (unreachable)
import { ByteBuffer, Bytes, Emitter, FIRING_EARLY, FIRING_LATE, Header, Record, Window, joinFunc, reject } from "../../../assembly";
import { heapTop } from "../../../assembly/arena";
export * from "../../../assembly/exports/join";

function side(b: ByteBuffer, r: Record | null): void {
  if (r == null) {
    b.byte(0x2d);
    return;
  }
  b.bytes(r.value).byte(0x40).int(r.time).byte(0x23).int(r.input);
}

function join(key: Bytes, w: Window | null, left: Record | null, right: Record | null, out: Emitter): void {
  const l = left != null ? left.value : new Bytes();
  if (l.equalsString("trap")) unreachable();
  if (l.equalsString("none")) return;
  if (l.equalsString("heap")) {
    out.emitKV(key, new ByteBuffer().uint(<u64>heapTop()).toBytes(), 0);
    return;
  }
  if (l.equalsString("big")) {
    const v = Bytes.alloc(3 << 20);
    memory.fill(v.ptr, 0x61, <usize>v.length);
    out.emitKV(key, v, 0);
    return;
  }
  if (l.equalsString("mutate")) {
    left!.value = Bytes.fromString("mutated");
    left!.time = -1;
    out.emit(left!);
    return;
  }
  const b = new ByteBuffer();
  if (w == null) {
    b.string("interval");
  } else {
    b.int(w.start).string("..").int(w.end).byte(0x2f);
    b.string(w.firing == FIRING_EARLY ? "early" : w.firing == FIRING_LATE ? "late" : "on-time");
  }
  b.byte(0x20);
  side(b, left);
  b.byte(0x7c);
  side(b, right);
  const hs = new Array<Header>();
  if (left != null) for (let i = 0; i < left.headerCount; i++) hs.push(left.headers[i]);
  if (right != null) for (let i = 0; i < right.headerCount; i++) hs.push(right.headers[i]);
  const res = new Record(key, b.toBytes(), 0, hs);
  out.emit(res);
  if (l.equalsString("twice")) out.emit(res);
  if (l.equalsString("reject") || (right != null && right.value.equalsString("reject"))) {
    reject("rejected pair " + key.toString());
  }
}

joinFunc(join);
