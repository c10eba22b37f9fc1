import { arenaEpoch, isPersistent } from "./arena";
import { Bytes } from "./bytes";
import { panic } from "./log";
import { stringUtf8Len, writeString } from "./utf8";

/**
 * ByteBuffer builds a byte string by appending: an output value, a state
 * value, a key. Its bytes live in the call's arena; toBytes returns a view
 * of them that stays valid until the next append that grows the buffer,
 * and until the call ends.
 *
 * A ByteBuffer may be created once, at the module's top level or in the
 * configure handler, and reused from call to call with reset(): storage it
 * grew during an earlier call is released with that call's arena, and the
 * buffer notices and takes new storage. Keeping contents across calls is a
 * bug that traps.
 */
export class ByteBuffer {
  /** Address of the first byte. */
  ptr: usize = 0;
  /** Bytes written. */
  length: i32 = 0;
  private cap: i32 = 0;
  private epoch: u32 = 0;

  /** Makes an empty buffer that first allocates room for capacity bytes. */
  constructor(capacity: i32 = 0) {
    if (capacity > 0) this.grow(capacity);
  }

  /** Empties the buffer, keeping its storage when that is still valid. */
  reset(): void {
    this.length = 0;
  }

  /** Returns a view of the bytes written so far. */
  toBytes(): Bytes {
    return new Bytes(this.ptr, this.length);
  }

  /** Returns a copy of the bytes written so far, in the call's arena. */
  copyBytes(): Bytes {
    return this.toBytes().copy();
  }

  /**
   * Makes room for n more bytes and returns the address where they go; the
   * caller writes them and then calls advance(n).
   */
  reserve(n: i32): usize {
    if (this.ptr != 0 && this.epoch != arenaEpoch() && !isPersistent(this.ptr)) {
      // The storage was released with an earlier call's arena.
      if (this.length != 0) panic("sluice: ByteBuffer kept its contents across guest calls; reset it in the call that fills it");
      this.ptr = 0;
      this.cap = 0;
    }
    if (this.cap - this.length < n) this.grow(n);
    return this.ptr + <usize>this.length;
  }

  /** Counts n bytes written at the address reserve returned. */
  advance(n: i32): void {
    this.length += n;
  }

  private grow(n: i32): void {
    const need = <i64>this.length + <i64>n;
    if (need > 0x7fffffff) panic("sluice: ByteBuffer over 2 GiB");
    let c = max<i64>(<i64>this.cap * 2, need);
    c = max<i64>(c, 64);
    if (c > 0x7fffffff) c = 0x7fffffff;
    const p = heap.alloc(<usize>c);
    if (this.length > 0) memory.copy(p, this.ptr, <usize>this.length);
    this.ptr = p;
    this.cap = <i32>c;
    this.epoch = arenaEpoch();
  }

  /** Appends one byte. */
  byte(c: u8): ByteBuffer {
    store<u8>(this.reserve(1), c);
    this.length++;
    return this;
  }

  /** Appends b's bytes. */
  bytes(b: Bytes): ByteBuffer {
    const p = this.reserve(b.length);
    memory.copy(p, b.ptr, <usize>b.length);
    this.length += b.length;
    return this;
  }

  /** Appends n bytes at p. */
  raw(p: usize, n: i32): ByteBuffer {
    const d = this.reserve(n);
    memory.copy(d, p, <usize>n);
    this.length += n;
    return this;
  }

  /** Appends the UTF-8 encoding of s. */
  string(s: string): ByteBuffer {
    const n = stringUtf8Len(s);
    writeString(this.reserve(n), s);
    this.length += n;
    return this;
  }

  /** Appends v in 4 bytes, little endian. */
  u32le(v: u32): ByteBuffer {
    store<u32>(this.reserve(4), v);
    this.length += 4;
    return this;
  }

  /** Appends v in 8 bytes, little endian. */
  u64le(v: u64): ByteBuffer {
    store<u64>(this.reserve(8), v);
    this.length += 8;
    return this;
  }

  /** Appends v in decimal, as Go's strconv.AppendUint(dst, v, 10). */
  uint(v: u64): ByteBuffer {
    let n = 1;
    for (let x = v; x >= 10; x /= 10) n++;
    let p = this.reserve(n) + <usize>n;
    do {
      p--;
      store<u8>(p, <u8>(48 + v % 10));
      v /= 10;
    } while (v != 0);
    this.length += n;
    return this;
  }

  /** Appends v in decimal, as Go's strconv.AppendInt(dst, v, 10). */
  int(v: i64): ByteBuffer {
    if (v < 0) {
      this.byte(0x2d);
      // -v overflows for i64.MIN_VALUE; as an unsigned value it is right.
      return this.uint(<u64>0 - <u64>v);
    }
    return this.uint(<u64>v);
  }
}
