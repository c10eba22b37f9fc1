import { rawAlloc } from "./arena";
import { decodeString, stringUtf8Len, writeString } from "./utf8";
import { panic } from "./log";

/**
 * Bytes is a view of bytes in the module's memory: a pointer and a length,
 * like a Go []byte without capacity. Keys, values, header names and
 * values, state values and arguments are all Bytes.
 *
 * A Bytes the SDK hands a handler usually aliases the input the host wrote
 * (the batch, the apply request): it is valid only during the handler
 * call, and the handler may change the bytes in place. Bytes made with
 * alloc, fromString or copy live in the call's arena (see arena.ts): until
 * the next guest call starts.
 */
@final
export class Bytes {
  /** Address of the first byte in linear memory. */
  ptr: usize;
  /** Number of bytes. */
  length: i32;

  constructor(ptr: usize = 0, length: i32 = 0) {
    this.ptr = ptr;
    this.length = length;
  }

  /** Returns n uninitialised bytes from the call's arena. */
  static alloc(n: i32): Bytes {
    if (n < 0) panic("sluice: Bytes.alloc with a negative length");
    return new Bytes(rawAlloc(<usize>n), n);
  }

  /** Returns the UTF-8 encoding of s (unpaired surrogates as U+FFFD). */
  static fromString(s: string): Bytes {
    const n = stringUtf8Len(s);
    const p = rawAlloc(<usize>n);
    writeString(p, s);
    return new Bytes(p, n);
  }

  /** Returns a view of buf's bytes, without copying. */
  static wrap(buf: ArrayBuffer): Bytes {
    return new Bytes(changetype<usize>(buf), buf.byteLength);
  }

  /** Returns a view of a's bytes, without copying. */
  static view(a: Uint8Array): Bytes {
    return new Bytes(a.dataStart, a.length);
  }

  /** Returns byte i; an index out of range traps. */
  @operator("[]")
  at(i: i32): u8 {
    if (<u32>i >= <u32>this.length) panic("sluice: Bytes index out of range");
    return load<u8>(this.ptr + <usize>i);
  }

  /** Sets byte i; an index out of range traps. */
  @operator("[]=")
  set(i: i32, v: u8): void {
    if (<u32>i >= <u32>this.length) panic("sluice: Bytes index out of range");
    store<u8>(this.ptr + <usize>i, v);
  }

  /** Returns byte i without a bounds check. */
  @operator("{}")
  unchecked(i: i32): u8 {
    return load<u8>(this.ptr + <usize>i);
  }

  /**
   * Returns a view of bytes [start, end), without copying. Negative
   * indices count from the end and out-of-range ones are clamped, as
   * Uint8Array.subarray does.
   */
  slice(start: i32 = 0, end: i32 = i32.MAX_VALUE): Bytes {
    const n = this.length;
    let s = start < 0 ? max(n + start, 0) : min(start, n);
    let e = end < 0 ? max(n + end, 0) : min(end, n);
    if (e < s) e = s;
    return new Bytes(this.ptr + <usize>s, e - s);
  }

  /** Reports whether b holds the same bytes. */
  equals(b: Bytes): bool {
    return this.length == b.length && memory.compare(this.ptr, b.ptr, <usize>this.length) == 0;
  }

  /** Reports whether the bytes are the UTF-8 encoding of s. */
  equalsString(s: string): bool {
    const n = this.length;
    // The common case, an ASCII string, without converting it.
    if (s.length == n) {
      let ascii = true;
      for (let i = 0; i < n; i++) {
        const c = <u32>load<u16>(changetype<usize>(s) + (<usize>i << 1));
        if (c >= 0x80) {
          ascii = false;
          break;
        }
        if (c != <u32>load<u8>(this.ptr + <usize>i)) return false;
      }
      if (ascii) return true;
    }
    if (stringUtf8Len(s) != n) return false;
    return this.equals(Bytes.fromString(s));
  }

  /** Returns the index of the first byte c at or after from, or -1. */
  indexOf(c: u8, from: i32 = 0): i32 {
    for (let i = max(from, 0); i < this.length; i++) {
      if (load<u8>(this.ptr + <usize>i) == c) return i;
    }
    return -1;
  }

  /** Returns a copy in the call's arena. */
  copy(): Bytes {
    const b = Bytes.alloc(this.length);
    memory.copy(b.ptr, this.ptr, <usize>this.length);
    return b;
  }

  /** Decodes the bytes as UTF-8; each byte of an invalid sequence becomes U+FFFD. */
  toString(): string {
    return decodeString(this.ptr, this.length);
  }

  /** Returns a copy as a Uint8Array. */
  toUint8Array(): Uint8Array {
    const a = new Uint8Array(this.length);
    memory.copy(a.dataStart, this.ptr, <usize>this.length);
    return a;
  }
}
