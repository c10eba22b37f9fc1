// Go's strconv.Quote, which fmt's %q applies to strings and byte slices:
// error messages of an operator ported from Go (`key %q: ...`) come out
// byte for byte the same.

import { Bytes } from "./bytes";
import { PRINT16, PRINT32 } from "./printable";
import { RUNE_ERROR, decodeRune } from "./utf8";

/** Reports whether Go's strconv.IsPrint accepts r. */
export function isPrint(r: i32): bool {
  if (r <= 0xff) {
    if (r >= 0x20 && r <= 0x7e) return true;
    if (r >= 0xa1 && r <= 0xff) return r != 0xad;
    return false;
  }
  if (r < 0x10000) return inRanges16(r);
  return inRanges32(r);
}

function inRanges16(r: i32): bool {
  // Binary search over the lo, hi pairs.
  let lo = 0;
  let hi = PRINT16.length >> 1;
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (<i32>unchecked(PRINT16[2 * m + 1]) < r) lo = m + 1;
    else hi = m;
  }
  return lo < PRINT16.length >> 1 && <i32>unchecked(PRINT16[2 * lo]) <= r;
}

function inRanges32(r: i32): bool {
  let lo = 0;
  let hi = PRINT32.length >> 1;
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (<i32>unchecked(PRINT32[2 * m + 1]) < r) lo = m + 1;
    else hi = m;
  }
  return lo < PRINT32.length >> 1 && <i32>unchecked(PRINT32[2 * lo]) <= r;
}

const HEX = "0123456789abcdef";

function hexDigits(r: i32, n: i32): string {
  let s = "";
  for (let shift = (n - 1) * 4; shift >= 0; shift -= 4) s += HEX.charAt((r >> shift) & 0xf);
  return s;
}

/**
 * Appends the escaped form of rune r, as Go's strconv appendEscapedRune
 * does for a double-quoted string, to s.
 */
function escapeRune(s: string, r: i32): string {
  if (r == 0x22 || r == 0x5c) return s + "\\" + String.fromCharCode(r);
  if (isPrint(r)) return s + String.fromCodePoint(r);
  switch (r) {
    case 0x07: return s + "\\a";
    case 0x08: return s + "\\b";
    case 0x0c: return s + "\\f";
    case 0x0a: return s + "\\n";
    case 0x0d: return s + "\\r";
    case 0x09: return s + "\\t";
    case 0x0b: return s + "\\v";
  }
  if (r < 0x20 || r == 0x7f) return s + "\\x" + hexDigits(r, 2);
  if (r < 0x10000) return s + "\\u" + hexDigits(r, 4);
  return s + "\\U" + hexDigits(r, 8);
}

/**
 * Returns b as a double-quoted Go string literal, exactly as Go's
 * strconv.Quote(string(b)) and fmt.Sprintf("%q", b): printable runes as
 * they are, others and invalid UTF-8 bytes escaped.
 */
export function quote(b: Bytes): string {
  let s = "\"";
  let p = b.ptr;
  const end = b.ptr + <usize>b.length;
  while (p < end) {
    const c = <i32>load<u8>(p);
    if (c < 0x80) {
      if (c >= 0x20 && c <= 0x7e && c != 0x22 && c != 0x5c) s += String.fromCharCode(c);
      else s = escapeRune(s, c);
      p++;
      continue;
    }
    const rw = decodeRune(p, end);
    const r = <i32>rw;
    const w = <usize>(rw >>> 32);
    if (w == 1 && r == RUNE_ERROR) {
      s += "\\x" + hexDigits(c, 2);
    } else {
      s = escapeRune(s, r);
    }
    p += w;
  }
  return s + "\"";
}

/** Returns quote of the UTF-8 encoding of s. */
export function quoteString(s: string): string {
  return quote(Bytes.fromString(s));
}
