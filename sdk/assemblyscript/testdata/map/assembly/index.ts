// Test operator (map): what the record's key asks for.
//   upper   upper-case the value in place (forwarded as encoded)
//   same    nothing (forwarded)
//   value   a new value "v:<old>" (encoded again)
//   key     a new key "k2"
//   time    time + 1
//   hdr     set header "h" to "x" (replaced, or appended)
//   hdrkeep read the headers, change nothing (forwarded)
//   reject  dead-letter with "rejected <value>"
//   heap    the value becomes the heap top, in decimal
//   input   the value becomes the record's input, in decimal
//   trap    trap (unreachable)
import { ByteBuffer, Bytes, Record, map, quote, reject } from "../../../assembly";
import { heapTop } from "../../../assembly/arena";
export * from "../../../assembly/exports/stream";

map((r: Record): void => {
  const k = r.key;
  if (k.equalsString("upper")) {
    for (let i = 0; i < r.value.length; i++) {
      const c = r.value[i];
      if (c >= 0x61 && c <= 0x7a) r.value[i] = c - 0x20;
    }
  } else if (k.equalsString("value")) {
    r.value = new ByteBuffer().string("v:").bytes(r.value).toBytes();
  } else if (k.equalsString("key")) {
    r.key = Bytes.fromString("k2");
  } else if (k.equalsString("time")) {
    r.time++;
  } else if (k.equalsString("hdr")) {
    r.setHeader("h", Bytes.fromString("x"));
  } else if (k.equalsString("hdrkeep")) {
    const h = r.header("a");
    if (h != null && h.length > 100) r.value = h;
  } else if (k.equalsString("reject")) {
    reject("rejected " + quote(r.value));
  } else if (k.equalsString("heap")) {
    r.value = new ByteBuffer().uint(<u64>heapTop()).toBytes();
  } else if (k.equalsString("input")) {
    r.value = new ByteBuffer().uint(<u64>r.input).toBytes();
  } else if (k.equalsString("trap")) {
    unreachable();
  }
});
