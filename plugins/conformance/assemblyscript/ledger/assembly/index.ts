// ledger: the conformance twin of plugins/ledger (plugins/ledger/ledgerop),
// MorphStream's Streaming Ledger as a transactional operator. Deposits
// credit an account and a book entry; transfers move an amount from an
// account and a book entry to others when the source account's balance
// and the source book entry's both cover it, and abort otherwise (the
// debit of the source book entry, the first operation, checks both: it
// reads the source account, and a debit needs its own balance to cover
// the amount). Same tables (accounts, book_entries, in
// that order), same events (txn/apps/ledger/event), same declarations,
// same functions and the same output records as the Go operator:
//
//   deposit committed <account> <book entry>
//   transfer committed|aborted <source account> <source book entry> <destination account> <destination book entry>
//
// the balances the event read before it changed them, "-" for one its
// transaction never read. An event that does not decode declares nothing
// and is dead-lettered by post with the decoder's error.

import {
  ByteBuffer, Bytes, Call, Effect, Emitter, Key, Outcome, Planner, Record, quote, reject, transactional,
} from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/txn";
import { ACCOUNTS, BOOK_ENTRIES, balanceError, decodeBalance, decodeEvent, eventError, key } from "./event";

// Functions, by index in the operator's function list.
const FN_CREDIT = 0;
const FN_CREDIT_IF_FUNDED = 1;
const FN_DEBIT_IF_FUNDED = 2;

// An operation's argument: the amount (i64) and the busy work in
// nanoseconds (u32), little endian.
const ARG_SIZE = 12;

function plan(ev: Record, p: Planner): void {
  const e = decodeEvent(ev.value);
  if (e == null) return; // no operations: post dead-letters the event
  const arg = Bytes.alloc(ARG_SIZE);
  store<i64>(arg.ptr, e.amount);
  store<u32>(arg.ptr, e.busyNanos, 8);
  if (e.deposit) {
    p.write(ACCOUNTS, key(e.account), FN_CREDIT, arg);
    p.write(BOOK_ENTRIES, key(e.book), FN_CREDIT, arg);
    return;
  }
  const src = new Key(ACCOUNTS, key(e.account));
  const reads = [src];
  p.write(BOOK_ENTRIES, key(e.book), FN_DEBIT_IF_FUNDED, arg, reads);
  p.write(ACCOUNTS, key(e.dstAccount), FN_CREDIT_IF_FUNDED, arg, reads);
  p.write(BOOK_ENTRIES, key(e.dstBook), FN_CREDIT_IF_FUNDED, arg, reads);
  p.write(ACCOUNTS, src.key, FN_DEBIT_IF_FUNDED, arg);
}

// Where spin leaves its result, so that the optimiser keeps the work.
const sink = memory.data(8);

// spin works for about ns nanoseconds, deterministically, as
// plugins/internal/busy.Spin: 600 iterations per microsecond asked.
function spin(ns: u32): void {
  const n = <u64>ns * 600 / 1000;
  let h = <u64>ns | 1;
  for (let i: u64 = 0; i < n; i++) {
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15;
  }
  store<u64>(sink, h);
}

// The failure of the last helper that failed, or null.
let failure: string | null = null;

// args returns the operation's amount after its busy work.
function args(c: Call): i64 {
  const a = c.arg;
  if (a.length != ARG_SIZE) {
    failure = "ledger: operation on key " + quote(c.key) + ": argument of " + a.length.toString() + " bytes, want " + ARG_SIZE.toString();
    return 0;
  }
  spin(load<u32>(a.ptr, 8));
  return load<i64>(a.ptr);
}

// balance decodes a balance read from key (a missing key holds 0).
function balance(k: Bytes, v: Bytes | null): i64 {
  const b = decodeBalance(v);
  const err = balanceError;
  if (err != null) failure = "ledger: key " + quote(k) + ": " + err;
  return b;
}

const SOURCE_ACCOUNT = "source account";

function put(c: Call, v: i64, overflow: bool): Effect {
  if (overflow) return Effect.abort();
  const b = c.scratch(8);
  store<i64>(b.ptr, v);
  return Effect.write(b);
}

// add and sub return the result, and set over when it overflowed, as the
// Go operator's add and sub.
let over = false;

function add(a: i64, b: i64): i64 {
  const s = a + b;
  over = (s > a) != (b > 0);
  return s;
}

function sub(a: i64, b: i64): i64 {
  const d = a - b;
  over = (d < a) != (b > 0);
  return d;
}

function credit(c: Call): Effect {
  failure = null;
  const amount = args(c);
  if (failure != null) return Effect.fail(failure!);
  const b = balance(c.key, c.own());
  if (failure != null) return Effect.fail(failure!);
  const v = add(b, amount);
  return put(c, v, over);
}

function ifFunded(c: Call, debit: bool): Effect {
  failure = null;
  const amount = args(c);
  if (failure != null) return Effect.fail(failure!);
  const b = balance(c.key, c.own());
  if (failure != null) return Effect.fail(failure!);
  let ok: bool;
  if (c.readCount == 0) {
    ok = b >= amount;
  } else {
    const src = balance(Bytes.fromString(SOURCE_ACCOUNT), c.read(0));
    if (failure != null) return Effect.fail(failure!);
    ok = src >= amount;
  }
  if (!ok || (debit && b < amount)) return Effect.abort();
  const v = debit ? sub(b, amount) : add(b, amount);
  return put(c, v, over);
}

function creditIfFunded(c: Call): Effect {
  return ifFunded(c, false);
}

function debitIfFunded(c: Call): Effect {
  return ifFunded(c, true);
}

// What operation m of the outcome read: of its own key (own) or of its
// declared read 0; unread when it did not run.
let wasRead = false;

function own0(o: Outcome, m: i32): Bytes | null {
  wasRead = false;
  if (m >= o.opCount) return null;
  const op = o.op(m);
  wasRead = op.executed;
  return wasRead ? op.own() : null;
}

function read0(o: Outcome, m: i32): Bytes | null {
  wasRead = false;
  if (m >= o.opCount) return null;
  const op = o.op(m);
  wasRead = op.executed && op.readCount > 0;
  return wasRead ? op.read(0) : null;
}

function post(ev: Record, o: Outcome, out: Emitter): void {
  const e = decodeEvent(ev.value);
  if (e == null) {
    reject(eventError!);
    return;
  }
  const b = new ByteBuffer(64);
  b.string(e.deposit ? "deposit" : "transfer").byte(0x20).string(o.committed ? "committed" : "aborted");
  const n = e.deposit ? 2 : 4;
  for (let i = 0; i < n; i++) {
    // A deposit read its two own keys; a transfer the source account (read
    // 0 of its first operation), then the own keys of its first three
    // operations.
    let v: Bytes | null;
    if (e.deposit) v = own0(o, i);
    else if (i == 0) v = read0(o, 0);
    else v = own0(o, i - 1);
    b.byte(0x20);
    if (!wasRead) {
      b.byte(0x2d);
      continue;
    }
    const x = decodeBalance(v);
    if (balanceError != null) {
      reject(balanceError!);
      return;
    }
    b.int(x);
  }
  out.emitKV(ev.key, b.toBytes(), ev.time);
}

transactional(plan, [credit, creditIfFunded, debitIfFunded], post);
