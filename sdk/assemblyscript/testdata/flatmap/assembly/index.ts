// Test operator (flatmap) with a configuration: the config is a decimal n
// (null: 2); each record is emitted n times with its value suffixed by the
// copy's index, keeping key, time and headers. A value "reject" emits
// first and then rejects; "heap" emits the heap top; "big" emits one
// 3 MiB record (several flushes).
import { ByteBuffer, Bytes, Emitter, Record, configure, flatMap, reject } from "../../../assembly";
import { heapTop } from "../../../assembly/arena";
export * from "../../../assembly/exports/stream";

let copies = 0;
// Persistent, since configure allocates it.
let label = new Bytes();

configure((config: Bytes): string | null => {
  if (config.equalsString("null")) {
    copies = 2;
  } else {
    let n = 0;
    for (let i = 0; i < config.length; i++) {
      const c = config[i];
      if (c < 0x30 || c > 0x39) return "config " + config.toString() + " is not a count";
      n = n * 10 + (c - 0x30);
    }
    copies = n;
  }
  label = Bytes.fromString("copy");
  return null;
});

flatMap((r: Record, out: Emitter): void => {
  if (r.value.equalsString("heap")) {
    r.value = new ByteBuffer().uint(<u64>heapTop()).toBytes();
    out.emit(r);
    return;
  }
  if (r.value.equalsString("big")) {
    const b = Bytes.alloc(3 << 20);
    memory.fill(b.ptr, 0x61, <usize>b.length);
    out.emitKV(r.key, b, r.time);
    out.emitKV(r.key, b, r.time);
    return;
  }
  const v = r.value;
  for (let i = 0; i < copies; i++) {
    r.value = new ByteBuffer().bytes(v).byte(0x2f).bytes(label).uint(<u64>i).toBytes();
    out.emit(r);
  }
  if (v.equalsString("reject")) reject("rejected after emitting");
});
