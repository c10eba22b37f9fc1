// Test operator (transactional), the twin of txnTwin in sdk_test.go: the
// Go SDK runs the same logic natively, and the test requires the same
// trace from both under every strategy. An event is a command:
//   add T K N     write K of table T: its number + N
//   move A B N    debit A of table 0 by N (abort if it holds less), then
//                 credit B by N if A (declared read, after the debit) holds
//                 at least N, else abort
//   del T K       delete K;  keep T K: leave K as it is
//   nd T K        non-deterministic on table T, reading key "r" of table 1:
//                 if K exists, move its value to K+"x"; else set K to 1
//   fail K        the operation fails (the batch fails)
//   und           a non-deterministic operation that reads a key of
//                 another table (refused: the batch fails)
//   bad           plan fails (the batch fails)
//   anything else declares nothing; post rejects it
// Post emits the outcome: committed, and per operation whether it ran,
// its own value, its reads and its gets.
import {
  ByteBuffer, Bytes, Call, Effect, Emitter, Key, Outcome, Planner, Record, reject, transactional,
} from "../../../assembly";
export * from "../../../assembly/exports/txn";

function fields(b: Bytes): Array<Bytes> {
  const out = new Array<Bytes>();
  let start = 0;
  for (let i = 0; i <= b.length; i++) {
    if (i == b.length || b[i] == 0x20) {
      if (i > start) out.push(b.slice(start, i));
      start = i + 1;
    }
  }
  return out;
}

function num(v: Bytes | null): i64 {
  if (v == null) return 0;
  let n: i64 = 0;
  for (let i = 0; i < v.length; i++) n = n * 10 + <i64>(v[i] - 0x30);
  return n;
}

function table(b: Bytes): u32 {
  return b.equalsString("1") ? 1 : 0;
}

function plan(ev: Record, p: Planner): void {
  const f = fields(ev.value);
  if (f.length == 0) return;
  const cmd = f[0];
  if (cmd.equalsString("add") && f.length == 4) {
    p.write(table(f[1]), f[2], 0, f[3]);
  } else if (cmd.equalsString("move") && f.length == 4) {
    p.write(0, f[1], 1, f[3]);
    p.write(0, f[2], 2, f[3], [new Key(0, f[1])]);
  } else if (cmd.equalsString("del") && f.length == 3) {
    p.write(table(f[1]), f[2], 3, new Bytes());
  } else if (cmd.equalsString("keep") && f.length == 3) {
    p.write(table(f[1]), f[2], 4, new Bytes());
  } else if (cmd.equalsString("nd") && f.length == 3) {
    p.nonDet(table(f[1]), 5, f[2], [new Key(1, Bytes.fromString("r"))]);
  } else if (cmd.equalsString("fail") && f.length == 2) {
    p.write(0, f[1], 6, new Bytes());
  } else if (cmd.equalsString("und")) {
    p.nonDet(0, 7, new Bytes());
  } else if (cmd.equalsString("bad")) {
    p.fail("bad event");
  }
}

function numBytes(c: Call, n: i64): Bytes {
  const s = new ByteBuffer().int(n).toBytes();
  const b = c.scratch(s.length);
  memory.copy(b.ptr, s.ptr, <usize>s.length);
  return b;
}

function add(c: Call): Effect {
  return Effect.write(numBytes(c, num(c.own()) + num(c.arg)));
}

function debit(c: Call): Effect {
  const own = num(c.own());
  const n = num(c.arg);
  if (own < n) return Effect.abort();
  return Effect.write(numBytes(c, own - n));
}

function credit(c: Call): Effect {
  if (num(c.read(0)) < num(c.arg)) return Effect.abort();
  return Effect.write(numBytes(c, num(c.own()) + num(c.arg)));
}

function del(c: Call): Effect {
  return Effect.delete();
}

function keep(c: Call): Effect {
  return Effect.keep();
}

function nonDet(c: Call): Effect {
  const k = c.arg;
  c.read(0);
  const v = c.get(c.table, k);
  if (v != null) {
    const moved = v.copy();
    if (!c.put(c.table, new ByteBuffer().bytes(k).string("x").toBytes(), moved)) return Effect.fail("put refused");
    if (!c.delete(c.table, k)) return Effect.fail("delete refused");
    // Reads its own writes.
    if (c.get(c.table, k) != null) return Effect.fail("deleted key still there");
  } else if (!c.put(c.table, k, Bytes.fromString("1"))) {
    return Effect.fail("put refused");
  }
  return Effect.keep();
}

function fail(c: Call): Effect {
  return Effect.fail("boom " + c.key.toString());
}

function undeclared(c: Call): Effect {
  c.get(1, Bytes.fromString("zz"));
  return Effect.keep();
}

function value(b: ByteBuffer, v: Bytes | null): void {
  if (v == null) b.string("nil");
  else b.byte(0x22).bytes(v).byte(0x22);
}

function post(ev: Record, o: Outcome, out: Emitter): void {
  if (o.opCount == 0 && !ev.value.equalsString("")) {
    reject("unknown command " + ev.value.toString());
    return;
  }
  const b = new ByteBuffer();
  b.string(o.committed ? "committed" : "aborted");
  for (let m = 0; m < o.opCount; m++) {
    const op = o.op(m);
    b.string(" op").uint(<u64>m).string(op.executed ? ":ran own=" : ":skipped own=");
    value(b, op.own());
    b.string(" reads=");
    for (let i = 0; i < op.readCount; i++) {
      if (i > 0) b.byte(0x2c);
      value(b, op.read(i));
    }
    b.string(" gets=");
    for (let i = 0; i < op.getCount; i++) {
      if (i > 0) b.byte(0x2c);
      const g = op.get(i)!;
      b.uint(<u64>g.table).byte(0x2f).bytes(g.key).byte(0x3d);
      value(b, g.value);
    }
  }
  out.emitKV(ev.key, b.toBytes(), ev.time);
}

transactional(plan, [add, debit, credit, del, keep, nonDet, fail, undeclared], post);
