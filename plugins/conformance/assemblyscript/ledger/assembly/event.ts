// The Streaming Ledger wire format, as txn/apps/ledger/event reads and
// writes it: events, balances and keys, with the same checks and the same
// error texts (wire.FieldError: "ledger event: field amount at byte 9:
// truncated").

import { Bytes } from "../../../../../sdk/assemblyscript/assembly";

/** Table handles, in the order the pipeline declares the tables. */
export const ACCOUNTS: u32 = 0;
export const BOOK_ENTRIES: u32 = 1;

const TAG: u8 = 0x4c; // 'L'
const FLAG_DEPOSIT: u8 = 1;
const MAX_KEY: u64 = 100000000 - 1;

/** A deposit or a transfer. */
export class Event {
  deposit: bool = false;
  account: u32 = 0;
  book: u32 = 0;
  dstAccount: u32 = 0;
  dstBook: u32 = 0;
  amount: i64 = 0;
  busyNanos: u32 = 0;
}

// A reader that keeps the first failure, as wire.Reader.
class Reader {
  off: i32 = 0;
  err: string | null = null;
  constructor(public format: string, public b: Bytes) {}

  failAt(field: string, off: i32, reason: string): void {
    if (this.err == null) this.err = this.format + ": field " + field + " at byte " + off.toString() + ": " + reason;
  }

  byte(field: string): u8 {
    if (this.err != null) return 0;
    if (this.off >= this.b.length) {
      this.failAt(field, this.off, "truncated");
      return 0;
    }
    return this.b[this.off++];
  }

  uvarint(field: string): u64 {
    if (this.err != null) return 0;
    let v: u64 = 0;
    for (let i = 0; this.off + i < this.b.length; i++) {
      const c = <u64>this.b[this.off + i];
      if (i == 9) {
        // A 10th byte holds bit 63 only.
        if (c > 1) {
          this.failAt(field, this.off, "varint overflows 64 bits");
          return 0;
        }
        this.off += 10;
        return v | (c << 63);
      }
      if (c < 0x80) {
        this.off += i + 1;
        return v | (c << (7 * <u64>i));
      }
      v |= (c & 0x7f) << (7 * <u64>i);
    }
    this.failAt(field, this.off, "truncated");
    return 0;
  }

  uvarint32(field: string, max: u64): u32 {
    const off = this.off;
    const v = this.uvarint(field);
    if (v > max) {
      this.failAt(field, off, "out of range (over " + max.toString() + ")");
      return 0;
    }
    return <u32>v;
  }

  int64(field: string): i64 {
    const off = this.off;
    const v = this.uvarint(field);
    if (v > <u64>i64.MAX_VALUE) {
      this.failAt(field, off, "out of range (over 2^63-1)");
      return 0;
    }
    return <i64>v;
  }

  finish(): string | null {
    if (this.err == null && this.off != this.b.length) {
      this.failAt("end", this.off, (this.b.length - this.off).toString() + " trailing bytes");
    }
    return this.err;
  }
}

const HEX = "0123456789abcdef";

function hexByte(c: u8): string {
  return "0x" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
}

/** The error of the last decodeEvent that failed, or null. */
export let eventError: string | null = null;

/** Decodes an event; on a malformed input returns null and sets eventError. */
export function decodeEvent(b: Bytes): Event | null {
  const e = new Event();
  const r = new Reader("ledger event", b);
  const c = r.byte("tag");
  if (r.err == null && c != TAG) r.failAt("tag", 0, "not a Streaming Ledger event (tag " + hexByte(c) + ", want " + hexByte(TAG) + ")");
  const flags = r.byte("flags");
  if ((flags & ~FLAG_DEPOSIT) != 0) r.failAt("flags", 1, "unknown flag bits");
  e.deposit = (flags & FLAG_DEPOSIT) != 0;
  e.account = r.uvarint32("account", MAX_KEY);
  e.book = r.uvarint32("book", MAX_KEY);
  if (!e.deposit) {
    e.dstAccount = r.uvarint32("dst account", MAX_KEY);
    e.dstBook = r.uvarint32("dst book", MAX_KEY);
  }
  e.amount = r.int64("amount");
  e.busyNanos = r.uvarint32("busy-ns", 0xffffffff);
  eventError = r.finish();
  return eventError == null ? e : null;
}

/** Returns key k of either table: k in 8 decimal digits. */
export function key(k: u32): Bytes {
  const b = Bytes.alloc(8);
  for (let i = 7; i >= 0; i--) {
    b[i] = <u8>(0x30 + k % 10);
    k /= 10;
  }
  return b;
}

/** The error of the last decodeBalance that failed, or null. */
export let balanceError: string | null = null;

/**
 * Decodes a balance: 8 bytes little endian; an empty value (a key never
 * written) is 0. Any other length fails (balanceError).
 */
export function decodeBalance(b: Bytes | null): i64 {
  balanceError = null;
  if (b == null || b.length == 0) return 0;
  if (b.length == 8) return load<i64>(b.ptr);
  balanceError = "ledger balance: field balance at byte 0: length " + b.length.toString() + ", want 0 or 8";
  return 0;
}
