// UTF-8 with Go's rules: a decoder that reads one rune at a time and
// reports each byte of an invalid sequence as its own U+FFFD (Go's
// utf8.DecodeRune: overlong forms, surrogates and code points past
// U+10FFFF are invalid), and the conversions between AssemblyScript's
// UTF-16 strings and UTF-8 bytes that the SDK uses for messages, names and
// Bytes.toString.

/** U+FFFD, what an invalid byte decodes to. */
export const RUNE_ERROR: i32 = 0xfffd;

/**
 * Decodes the rune at [p, end) as Go's utf8.DecodeRune does, and returns
 * it with its width packed: rune | width << 32. An invalid or truncated
 * sequence is (RUNE_ERROR, 1); an empty input is (RUNE_ERROR, 0).
 */
export function decodeRune(p: usize, end: usize): u64 {
  if (p >= end) return <u64>RUNE_ERROR;
  const c0 = <u32>load<u8>(p);
  if (c0 < 0x80) return <u64>c0 | (<u64>1 << 32);
  const n = end - p;
  // The first continuation byte's range depends on the leading byte.
  let lo: u32 = 0x80, hi: u32 = 0xbf;
  let width: usize;
  let r: u32;
  if (c0 >= 0xc2 && c0 <= 0xdf) {
    width = 2; r = c0 & 0x1f;
  } else if (c0 >= 0xe0 && c0 <= 0xef) {
    width = 3; r = c0 & 0x0f;
    if (c0 == 0xe0) lo = 0xa0;
    else if (c0 == 0xed) hi = 0x9f;
  } else if (c0 >= 0xf0 && c0 <= 0xf4) {
    width = 4; r = c0 & 0x07;
    if (c0 == 0xf0) lo = 0x90;
    else if (c0 == 0xf4) hi = 0x8f;
  } else {
    return <u64>RUNE_ERROR | (<u64>1 << 32);
  }
  if (n < width) {
    // Go reports a truncated sequence as one invalid byte too.
    return <u64>RUNE_ERROR | (<u64>1 << 32);
  }
  const c1 = <u32>load<u8>(p + 1);
  if (c1 < lo || c1 > hi) return <u64>RUNE_ERROR | (<u64>1 << 32);
  r = (r << 6) | (c1 & 0x3f);
  for (let i: usize = 2; i < width; i++) {
    const c = <u32>load<u8>(p + i);
    if (c < 0x80 || c > 0xbf) return <u64>RUNE_ERROR | (<u64>1 << 32);
    r = (r << 6) | (c & 0x3f);
  }
  return <u64>r | (<u64>width << 32);
}

/** Writes the UTF-8 encoding of r (a valid code point) at p; returns its width. */
export function encodeRune(p: usize, r: i32): i32 {
  if (r < 0x80) {
    store<u8>(p, <u8>r);
    return 1;
  }
  if (r < 0x800) {
    store<u8>(p, <u8>(0xc0 | (r >> 6)));
    store<u8>(p + 1, <u8>(0x80 | (r & 0x3f)));
    return 2;
  }
  if (r < 0x10000) {
    store<u8>(p, <u8>(0xe0 | (r >> 12)));
    store<u8>(p + 1, <u8>(0x80 | ((r >> 6) & 0x3f)));
    store<u8>(p + 2, <u8>(0x80 | (r & 0x3f)));
    return 3;
  }
  store<u8>(p, <u8>(0xf0 | (r >> 18)));
  store<u8>(p + 1, <u8>(0x80 | ((r >> 12) & 0x3f)));
  store<u8>(p + 2, <u8>(0x80 | ((r >> 6) & 0x3f)));
  store<u8>(p + 3, <u8>(0x80 | (r & 0x3f)));
  return 4;
}

/**
 * Returns the length of the UTF-8 encoding of s, with unpaired surrogates
 * taking the 3 bytes of U+FFFD.
 */
export function stringUtf8Len(s: string): i32 {
  return String.UTF8.byteLength(s);
}

/**
 * Writes the UTF-8 encoding of s at p (stringUtf8Len(s) bytes), unpaired
 * surrogates as U+FFFD, and returns the bytes written.
 */
export function writeString(p: usize, s: string): i32 {
  return <i32>String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, p, false, String.UTF8.ErrorMode.REPLACE);
}

/**
 * Decodes the UTF-8 bytes [p, p+n) into a string, each byte of an invalid
 * sequence becoming U+FFFD, as Go's string([]rune(string(b))) would.
 */
export function decodeString(p: usize, n: i32): string {
  const end = p + <usize>n;
  // At most one UTF-16 unit per byte.
  const out = changetype<usize>(__new(<usize>n << 1, idof<string>()));
  let o = out;
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c < 0x80) {
      store<u16>(o, <u16>c);
      o += 2;
      p++;
      continue;
    }
    const rw = decodeRune(p, end);
    let r = <u32>rw;
    p += <usize>(rw >>> 32);
    if (r < 0x10000) {
      store<u16>(o, <u16>r);
      o += 2;
    } else {
      r -= 0x10000;
      store<u16>(o, <u16>(0xd800 | (r >> 10)));
      store<u16>(o + 2, <u16>(0xdc00 | (r & 0x3ff)));
      o += 4;
    }
  }
  return changetype<string>(__renew(out, o - out));
}
