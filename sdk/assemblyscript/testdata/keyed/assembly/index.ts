// Test operator (keyed): per record, by its value:
//   inc     count the key in the default table, emit the count
//   other   append "o" to the key's value in table "other", emit it
//   del     delete the key in the default table, emit "deleted"
//   big     store a 1000-byte value, read it back, emit its length
//   reject  store "x" then reject (the host undoes the store)
//   undecl  use table "nope" (traps)
import { ByteBuffer, Bytes, Emitter, Record, State, keyed, reject, tableId } from "../../../assembly";
export * from "../../../assembly/exports/stream";

function count(v: Bytes | null): u64 {
  if (v == null) return 0;
  let n: u64 = 0;
  for (let i = 0; i < v.length; i++) n = n * 10 + <u64>(v[i] - 0x30);
  return n;
}

keyed((r: Record, st: State, out: Emitter): void => {
  const v = r.value;
  if (v.equalsString("inc")) {
    const c = new ByteBuffer().uint(count(st.get()) + 1).toBytes();
    st.put(c);
    out.emitKV(r.key, c, r.time);
  } else if (v.equalsString("other")) {
    const o = st.table("other");
    const old = o.get();
    const b = new ByteBuffer();
    if (old != null) b.bytes(old);
    b.string("o");
    o.put(b.toBytes());
    out.emitKV(r.key, b.toBytes(), r.time);
    if (tableId("other") != 1 || tableId("counts") != 0 || tableId("nope") != -1) reject("table ids wrong");
  } else if (v.equalsString("del")) {
    st.delete();
    out.emitKV(r.key, Bytes.fromString(st.get() == null ? "deleted" : "still there"), r.time);
  } else if (v.equalsString("big")) {
    const b = Bytes.alloc(1000);
    memory.fill(b.ptr, 0x7a, 1000);
    st.put(b);
    const back = st.get();
    out.emitKV(r.key, new ByteBuffer().uint(back == null ? 0 : <u64>back.length).toBytes(), r.time);
  } else if (v.equalsString("reject")) {
    st.put(Bytes.fromString("x"));
    out.emitKV(r.key, Bytes.fromString("never seen"), r.time);
    reject("rejected");
  } else if (v.equalsString("undecl")) {
    st.table("nope");
  }
});
