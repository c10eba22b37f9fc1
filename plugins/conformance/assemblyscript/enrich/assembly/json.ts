// A JSON scanner that accepts, refuses and words its errors exactly as the
// parts of Go's encoding/json (v1) that plugins/enrich relies on:
//
//   - scan: json.Decoder's readValue, one value and where it ends, with
//     the scanner's state machine and its messages ("invalid character
//     'x' after object key");
//   - readObject: plugins/enrich's readObject, which walks an object with
//     Decoder.Token, More and Decode(&json.RawMessage), each with its own
//     checks and messages, and reports what a non-object is;
//   - unquote: a string literal's value (unquoteBytes: invalid UTF-8 and
//     lone surrogates become U+FFFD);
//   - compact: json.Compact;
//   - the walkers the configuration decoder uses on text scan accepted.
//
// Errors are strings, set in `jsonError`; `jsonEOF` tells an error that is
// an unexpected end of input, which the callers word as Go does for them.

import { ByteBuffer, Bytes, decodeRune, quote } from "../../../../../sdk/assemblyscript/assembly";
import { floatOverflow, parseFloat } from "./float";

/** The error of the last failed call, or null. */
export let jsonError: string | null = null;
/** Whether jsonError is an unexpected end of the input. */
export let jsonEOF = false;

function fail(msg: string): void {
  jsonError = msg;
  jsonEOF = false;
}

function failEOF(): void {
  jsonError = "unexpected end of JSON input";
  jsonEOF = true;
}

/** JSON white space: what Go's scanner skips. */
// @ts-ignore: decorator
@inline export function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0d || c == 0x0a;
}

/** Skips JSON white space from p and returns where it stops. */
export function skipSpace(p: usize, end: usize): usize {
  while (p < end && isSpace(load<u8>(p))) p++;
  return p;
}

/** Go's quoteChar: a byte as the scanner's messages show it. */
export function quoteChar(c: u32): string {
  if (c == 0x27) return "'\\''";
  if (c == 0x22) return "'\"'";
  // strconv.Quote(string(rune(c))) without its double quotes.
  const b = Bytes.alloc(c < 0x80 ? 1 : 2);
  if (c < 0x80) {
    b[0] = <u8>c;
  } else {
    b[0] = <u8>(0xc0 | (c >> 6));
    b[1] = <u8>(0x80 | (c & 0x3f));
  }
  const q = quote(b);
  return "'" + q.substring(1, q.length - 1) + "'";
}

// ---- The scanner --------------------------------------------------------------

// Scanner states, after Go's step functions.
const S_BEGIN_VALUE_OR_EMPTY = 0;
const S_BEGIN_VALUE = 1;
const S_BEGIN_STRING_OR_EMPTY = 2;
const S_BEGIN_STRING = 3;
const S_END_VALUE = 4;
const S_END_TOP = 5;
const S_IN_STRING = 6;
const S_IN_STRING_ESC = 7;
const S_ESC_U = 8; // + 0..3: hex digits seen
const S_NEG = 12;
const S_1 = 13;
const S_0 = 14;
const S_DOT = 15;
const S_DOT0 = 16;
const S_E = 17;
const S_ESIGN = 18;
const S_E0 = 19;
const S_LITERAL = 20; // the rest of true, false or null: litPos in LITERALS
const S_ERROR = 21;

// Results of a step.
const OP_CONTINUE = 0;
const OP_END = 1; // the top-level value ended before this byte
const OP_END_CONTAINER = 2; // this byte closed an object or array
const OP_ERROR = 3;

// Parse states of open containers.
const P_OBJECT_KEY: u8 = 0;
const P_OBJECT_VALUE: u8 = 1;
const P_ARRAY_VALUE: u8 = 2;

const MAX_DEPTH = 10000;

let state = S_BEGIN_VALUE;
let stack = new ByteBuffer();
// The literal being matched: its remaining letters and its name.
let litWord = "";
let litPos = 0;

function err(c: u32, context: string): i32 {
  state = S_ERROR;
  fail("invalid character " + quoteChar(c) + " " + context);
  return OP_ERROR;
}

function top(): u8 {
  return load<u8>(stack.ptr + <usize>(stack.length - 1));
}

function setTop(v: u8): void {
  store<u8>(stack.ptr + <usize>(stack.length - 1), v);
}

function push(c: u32, ps: u8): i32 {
  stack.byte(ps);
  if (stack.length > MAX_DEPTH) return err(c, "exceeded max depth");
  return OP_CONTINUE;
}

function pop(): void {
  stack.length--;
  state = stack.length == 0 ? S_END_TOP : S_END_VALUE;
}

function beginValue(c: u32): i32 {
  if (isSpace(c)) return OP_CONTINUE;
  switch (c) {
    case 0x7b: // {
      state = S_BEGIN_STRING_OR_EMPTY;
      return push(c, P_OBJECT_KEY);
    case 0x5b: // [
      state = S_BEGIN_VALUE_OR_EMPTY;
      return push(c, P_ARRAY_VALUE);
    case 0x22:
      state = S_IN_STRING;
      return OP_CONTINUE;
    case 0x2d:
      state = S_NEG;
      return OP_CONTINUE;
    case 0x30:
      state = S_0;
      return OP_CONTINUE;
    case 0x74: // t
      state = S_LITERAL;
      litWord = "true";
      litPos = 1;
      return OP_CONTINUE;
    case 0x66: // f
      state = S_LITERAL;
      litWord = "false";
      litPos = 1;
      return OP_CONTINUE;
    case 0x6e: // n
      state = S_LITERAL;
      litWord = "null";
      litPos = 1;
      return OP_CONTINUE;
  }
  if (c >= 0x31 && c <= 0x39) {
    state = S_1;
    return OP_CONTINUE;
  }
  return err(c, "looking for beginning of value");
}

function beginString(c: u32): i32 {
  if (isSpace(c)) return OP_CONTINUE;
  if (c == 0x22) {
    state = S_IN_STRING;
    return OP_CONTINUE;
  }
  return err(c, "looking for beginning of object key string");
}

function endValue(c: u32): i32 {
  if (stack.length == 0) {
    state = S_END_TOP;
    return endTop(c);
  }
  if (isSpace(c)) {
    state = S_END_VALUE;
    return OP_CONTINUE;
  }
  const ps = top();
  if (ps == P_OBJECT_KEY) {
    if (c == 0x3a) {
      setTop(P_OBJECT_VALUE);
      state = S_BEGIN_VALUE;
      return OP_CONTINUE;
    }
    return err(c, "after object key");
  }
  if (ps == P_OBJECT_VALUE) {
    if (c == 0x2c) {
      setTop(P_OBJECT_KEY);
      state = S_BEGIN_STRING;
      return OP_CONTINUE;
    }
    if (c == 0x7d) {
      pop();
      return OP_END_CONTAINER;
    }
    return err(c, "after object key:value pair");
  }
  if (c == 0x2c) {
    state = S_BEGIN_VALUE;
    return OP_CONTINUE;
  }
  if (c == 0x5d) {
    pop();
    return OP_END_CONTAINER;
  }
  return err(c, "after array element");
}

// A byte after a complete top-level value ends it, whatever the byte.
function endTop(c: u32): i32 {
  return OP_END;
}

function isHex(c: u32): bool {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

function step(c: u32): i32 {
  switch (state) {
    case S_BEGIN_VALUE_OR_EMPTY:
      if (isSpace(c)) return OP_CONTINUE;
      if (c == 0x5d) return endValue(c);
      return beginValue(c);
    case S_BEGIN_VALUE:
      return beginValue(c);
    case S_BEGIN_STRING_OR_EMPTY:
      if (isSpace(c)) return OP_CONTINUE;
      if (c == 0x7d) {
        setTop(P_OBJECT_VALUE);
        return endValue(c);
      }
      return beginString(c);
    case S_BEGIN_STRING:
      return beginString(c);
    case S_END_VALUE:
      return endValue(c);
    case S_END_TOP:
      return endTop(c);
    case S_IN_STRING:
      if (c == 0x22) {
        state = S_END_VALUE;
        return OP_CONTINUE;
      }
      if (c == 0x5c) {
        state = S_IN_STRING_ESC;
        return OP_CONTINUE;
      }
      if (c < 0x20) return err(c, "in string literal");
      return OP_CONTINUE;
    case S_IN_STRING_ESC:
      switch (c) {
        case 0x62: case 0x66: case 0x6e: case 0x72: case 0x74: case 0x5c: case 0x2f: case 0x22:
          state = S_IN_STRING;
          return OP_CONTINUE;
        case 0x75:
          state = S_ESC_U;
          return OP_CONTINUE;
      }
      return err(c, "in string escape code");
    case S_ESC_U:
    case S_ESC_U + 1:
    case S_ESC_U + 2:
    case S_ESC_U + 3:
      if (isHex(c)) {
        state = state == S_ESC_U + 3 ? S_IN_STRING : state + 1;
        return OP_CONTINUE;
      }
      return err(c, "in \\u hexadecimal character escape");
    case S_NEG:
      if (c == 0x30) {
        state = S_0;
        return OP_CONTINUE;
      }
      if (c >= 0x31 && c <= 0x39) {
        state = S_1;
        return OP_CONTINUE;
      }
      return err(c, "in numeric literal");
    case S_1:
      if (c >= 0x30 && c <= 0x39) return OP_CONTINUE;
      return state0(c);
    case S_0:
      return state0(c);
    case S_DOT:
      if (c >= 0x30 && c <= 0x39) {
        state = S_DOT0;
        return OP_CONTINUE;
      }
      return err(c, "after decimal point in numeric literal");
    case S_DOT0:
      if (c >= 0x30 && c <= 0x39) return OP_CONTINUE;
      if (c == 0x65 || c == 0x45) {
        state = S_E;
        return OP_CONTINUE;
      }
      return endValue(c);
    case S_E:
      if (c == 0x2b || c == 0x2d) {
        state = S_ESIGN;
        return OP_CONTINUE;
      }
      return eSign(c);
    case S_ESIGN:
      return eSign(c);
    case S_E0:
      if (c >= 0x30 && c <= 0x39) return OP_CONTINUE;
      return endValue(c);
    case S_LITERAL:
      if (c == <u32>litWord.charCodeAt(litPos)) {
        litPos++;
        if (litPos == litWord.length) state = S_END_VALUE;
        return OP_CONTINUE;
      }
      return err(c, "in literal " + litWord + " (expecting '" + litWord.charAt(litPos) + "')");
  }
  return OP_ERROR;
}

function state0(c: u32): i32 {
  if (c == 0x2e) {
    state = S_DOT;
    return OP_CONTINUE;
  }
  if (c == 0x65 || c == 0x45) {
    state = S_E;
    return OP_CONTINUE;
  }
  return endValue(c);
}

function eSign(c: u32): i32 {
  if (c >= 0x30 && c <= 0x39) {
    state = S_E0;
    return OP_CONTINUE;
  }
  return err(c, "in exponent of numeric literal");
}

/**
 * Scans one JSON value starting at p (after optional white space), as
 * json.Decoder's readValue does, and returns where it ends: after the
 * closing bracket of an object or array, at the byte after a string,
 * number or literal. Returns 0 on an error (jsonError, jsonEOF).
 */
export function scan(p: usize, end: usize): usize {
  state = S_BEGIN_VALUE;
  stack.reset();
  jsonError = null;
  jsonEOF = false;
  for (; p < end; p++) {
    const op = step(load<u8>(p));
    if (op == OP_END) return p;
    if (op == OP_END_CONTAINER && stack.length == 0) return p + 1;
    if (op == OP_ERROR) return 0;
  }
  // The end of the input: it completes a number or a literal, or it is
  // an unexpected end.
  if (step(0x20) == OP_END) return end;
  failEOF();
  return 0;
}

// ---- Strings ----------------------------------------------------------------

function hex4(p: usize, end: usize): i32 {
  if (end - p < 6 || load<u8>(p) != 0x5c || load<u8>(p + 1) != 0x75) return -1;
  let r = 0;
  for (let i: usize = 2; i < 6; i++) {
    const c = <i32>load<u8>(p + i);
    let d: i32;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
    else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
    else return -1;
    r = r * 16 + d;
  }
  return r;
}

function appendRune(b: ByteBuffer, r: i32): void {
  if (r < 0x80) {
    b.byte(<u8>r);
  } else if (r < 0x800) {
    b.byte(<u8>(0xc0 | (r >> 6))).byte(<u8>(0x80 | (r & 0x3f)));
  } else if (r < 0x10000) {
    b.byte(<u8>(0xe0 | (r >> 12))).byte(<u8>(0x80 | ((r >> 6) & 0x3f))).byte(<u8>(0x80 | (r & 0x3f)));
  } else {
    b.byte(<u8>(0xf0 | (r >> 18))).byte(<u8>(0x80 | ((r >> 12) & 0x3f)));
    b.byte(<u8>(0x80 | ((r >> 6) & 0x3f))).byte(<u8>(0x80 | (r & 0x3f)));
  }
}

/**
 * Returns the value of the string literal s (quotes included), which scan
 * accepted, as Go's unquoteBytes: escapes decoded, surrogate pairs joined,
 * a lone surrogate and each byte of invalid UTF-8 as U+FFFD.
 */
export function unquote(s: Bytes): Bytes {
  const b = new ByteBuffer(s.length);
  let p = s.ptr + 1;
  const end = s.ptr + <usize>s.length - 1;
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (c == 0x5c) {
      const e = <u32>load<u8>(p + 1);
      switch (e) {
        case 0x62: b.byte(0x08); p += 2; continue;
        case 0x66: b.byte(0x0c); p += 2; continue;
        case 0x6e: b.byte(0x0a); p += 2; continue;
        case 0x72: b.byte(0x0d); p += 2; continue;
        case 0x74: b.byte(0x09); p += 2; continue;
        case 0x75: {
          let r = hex4(p, end);
          p += 6;
          if (r >= 0xd800 && r < 0xe000) {
            const r2 = hex4(p, end);
            if (r < 0xdc00 && r2 >= 0xdc00 && r2 < 0xe000) {
              p += 6;
              r = 0x10000 + ((r - 0xd800) << 10) + (r2 - 0xdc00);
            } else {
              r = 0xfffd;
            }
          }
          appendRune(b, r);
          continue;
        }
      }
      b.byte(<u8>e); // " \ /
      p += 2;
      continue;
    }
    if (c < 0x80) {
      b.byte(<u8>c);
      p++;
      continue;
    }
    const rw = decodeRune(p, end);
    appendRune(b, <i32>rw);
    p += <usize>(rw >>> 32);
  }
  return b.toBytes();
}

/** Appends src, a value scan accepted, to dst without insignificant white space, as json.Compact. */
export function compact(dst: ByteBuffer, src: Bytes): void {
  let p = src.ptr;
  const end = src.ptr + <usize>src.length;
  let inString = false;
  while (p < end) {
    const c = <u32>load<u8>(p);
    if (inString) {
      dst.byte(<u8>c);
      if (c == 0x5c) {
        dst.byte(load<u8>(p + 1));
        p += 2;
        continue;
      }
      if (c == 0x22) inString = false;
    } else if (c == 0x22) {
      inString = true;
      dst.byte(<u8>c);
    } else if (!isSpace(c)) {
      dst.byte(<u8>c);
    }
    p++;
  }
}

// ---- Objects ----------------------------------------------------------------

/** Member is one name/value pair of an object, as readObject reads it. */
export class Member {
  constructor(
    /** The name's value, unquoted. */
    public name: Bytes,
    /** The name's text, quotes and escapes as written. */
    public key: Bytes,
    /** The value's text, without white space around it. */
    public value: Bytes,
  ) {}
}

/** Names the JSON type of a value's text by its first byte, as the Go plugin's kind. */
export function kindOf(v: Bytes): string {
  if (v.length == 0) return "empty";
  switch (v[0]) {
    case 0x22: return "a string";
    case 0x7b: return "an object";
    case 0x5b: return "an array";
    case 0x74:
    case 0x66: return "a boolean";
    case 0x6e: return "null";
  }
  return "not a number";
}

function tokenError(c: u32, context: string): void {
  fail("invalid character " + quoteChar(c) + context);
}

/**
 * Splits data, which must hold exactly one JSON object, into its members
 * in order, as plugins/enrich's readObject does with json.Decoder; returns
 * null on an error (jsonError; an unexpected end is worded "unexpected end
 * of JSON", as the Go plugin words it).
 */
export function readObject(data: Bytes): Array<Member> | null {
  const r = readObject_(data);
  if (r == null && jsonEOF) jsonError = "unexpected end of JSON";
  return r;
}

// Decoder.Token's states in an object.
const T_START = 0; // after {
const T_COMMA = 1; // after a value

function readObject_(data: Bytes): Array<Member> | null {
  jsonError = null;
  jsonEOF = false;
  const end = data.ptr + <usize>data.length;
  let p = skipSpace(data.ptr, end);
  if (p == end) {
    failEOF();
    return null;
  }
  const first = <u32>load<u8>(p);
  if (first != 0x7b) {
    switch (first) {
      case 0x5b:
        fail("it is an array");
        return null;
      case 0x5d: case 0x7d: case 0x3a: case 0x2c:
        tokenError(first, " looking for beginning of value");
        return null;
    }
    // Decoder.Token decodes the value into an interface{}.
    const vend = scan(p, end);
    if (vend == 0) return null;
    if (first == 0x2d || (first >= 0x30 && first <= 0x39)) {
      parseFloat(p, <i32>(vend - p));
      if (floatOverflow) {
        fail("json: cannot unmarshal number " + new Bytes(p, <i32>(vend - p)).toString() + " into Go value of type float64");
        return null;
      }
    }
    fail("it is " + kindOf(new Bytes(p, 1)));
    return null;
  }
  p++;
  const obj = new Array<Member>();
  let t = T_START;
  for (;;) {
    // Decoder.More, then Decoder.Token for a name or the closing brace.
    p = skipSpace(p, end);
    if (p == end) {
      failEOF();
      return null;
    }
    let c = <u32>load<u8>(p);
    if (c == 0x7d || c == 0x5d) {
      if (c == 0x5d) {
        tokenError(c, t == T_START ? "" : " after object key:value pair");
        return null;
      }
      p++;
      break;
    }
    if (t == T_COMMA) {
      if (c != 0x2c) {
        tokenError(c, " after object key:value pair");
        return null;
      }
      p = skipSpace(p + 1, end);
      if (p == end) {
        failEOF();
        return null;
      }
      c = <u32>load<u8>(p);
      if (c != 0x22) {
        tokenError(c, " looking for beginning of object key string");
        return null;
      }
    } else if (c != 0x22) {
      tokenError(c, "");
      return null;
    }
    const kend = scan(p, end);
    if (kend == 0) return null;
    const key = new Bytes(p, <i32>(kend - p));
    // Decode(&json.RawMessage): the colon, then the value.
    p = skipSpace(kend, end);
    if (p == end) {
      failEOF();
      return null;
    }
    if (load<u8>(p) != 0x3a) {
      fail("expected colon after object key");
      return null;
    }
    const vstart = skipSpace(p + 1, end);
    const vend = scan(p + 1, end);
    if (vend == 0) return null;
    obj.push(new Member(unquote(key), key, new Bytes(vstart, <i32>(vend - vstart))));
    p = vend;
    t = T_COMMA;
  }
  // The Token after the closing brace must be the end of the input.
  if (skipSpace(p, end) != end) {
    fail("data after the object");
    return null;
  }
  return obj;
}

// ---- Walking scanned text ---------------------------------------------------

/** Returns the end of the value at p (no leading space), which scan accepted. */
export function skipValue(p: usize, end: usize): usize {
  const c = <u32>load<u8>(p);
  if (c == 0x22) return skipString(p, end);
  if (c == 0x7b || c == 0x5b) {
    let depth = 0;
    while (p < end) {
      const d = <u32>load<u8>(p);
      if (d == 0x22) {
        p = skipString(p, end);
        continue;
      }
      p++;
      if (d == 0x7b || d == 0x5b) depth++;
      else if (d == 0x7d || d == 0x5d) {
        depth--;
        if (depth == 0) return p;
      }
    }
    return p;
  }
  // A number or a literal.
  while (p < end) {
    const d = <u32>load<u8>(p);
    if (isSpace(d) || d == 0x2c || d == 0x3a || d == 0x7d || d == 0x5d) break;
    p++;
  }
  return p;
}

// Returns the end of the string literal at p.
function skipString(p: usize, end: usize): usize {
  p++;
  while (p < end) {
    const d = load<u8>(p);
    if (d == 0x5c) p += 2;
    else if (d == 0x22) return p + 1;
    else p++;
  }
  return p;
}

/**
 * Lists the elements (for an array) or the name and value of each member
 * (for an object: name, value, name, value ...) of the container value v,
 * which scan accepted.
 */
export function items(v: Bytes): Array<Bytes> {
  const out = new Array<Bytes>();
  const end = v.ptr + <usize>v.length;
  let p = skipSpace(v.ptr + 1, end);
  if (load<u8>(p) == 0x7d || load<u8>(p) == 0x5d) return out;
  for (;;) {
    let e = skipValue(p, end);
    out.push(new Bytes(p, <i32>(e - p)));
    p = skipSpace(e, end);
    const c = load<u8>(p);
    if (c == 0x3a || c == 0x2c) {
      p = skipSpace(p + 1, end);
      continue;
    }
    return out;
  }
}
