// Decimal to float64, correctly rounded, as Go's strconv.ParseFloat(s, 64)
// for the texts of JSON numbers: the enrich operator compares record
// fields with its minimums exactly where the Go plugin does, and refuses
// the same configurations (a minimum that overflows float64).
//
// Numbers of up to 15 significant digits with a small exponent take
// Clinger's fast path (one exact operation on exact float64 operands);
// the rest is computed with big integers: the value as a fraction of two
// big naturals, divided to 54 bits plus a sticky bit, rounded half to
// even. Like Go, it keeps the first 800 significant digits and folds the
// rest into the sticky bit, which decides every rounding since a halfway
// point between two float64 has fewer significant digits.

/** Set by parseFloat when the value overflows float64 (Go's ErrRange). */
export let floatOverflow = false;

const MAX_DIGITS = 800;

// Natural numbers as little-endian arrays of 32-bit limbs, without high
// zero limbs.

function natMulSmall(a: Array<u32>, m: u32): void {
  let carry: u64 = 0;
  for (let i = 0; i < a.length; i++) {
    const t = <u64>unchecked(a[i]) * <u64>m + carry;
    unchecked((a[i] = <u32>t));
    carry = t >> 32;
  }
  if (carry != 0) a.push(<u32>carry);
}

function natAddSmall(a: Array<u32>, v: u32): void {
  let carry = <u64>v;
  for (let i = 0; i < a.length && carry != 0; i++) {
    const t = <u64>unchecked(a[i]) + carry;
    unchecked((a[i] = <u32>t));
    carry = t >> 32;
  }
  if (carry != 0) a.push(<u32>carry);
}

function natMulPow10(a: Array<u32>, k: i32): void {
  while (k >= 9) {
    natMulSmall(a, 1000000000);
    k -= 9;
  }
  let m: u32 = 1;
  while (k > 0) {
    m *= 10;
    k--;
  }
  if (m != 1) natMulSmall(a, m);
}

function natBitLen(a: Array<u32>): i32 {
  if (a.length == 0) return 0;
  return (a.length - 1) * 32 + (32 - <i32>clz(unchecked(a[a.length - 1])));
}

function natShl(a: Array<u32>, bits: i32): Array<u32> {
  const words = bits >> 5;
  const b = bits & 31;
  const r = new Array<u32>(a.length + words + 1);
  for (let i = 0; i < a.length; i++) {
    const v = <u64>unchecked(a[i]) << <u64>b;
    unchecked((r[i + words] = r[i + words] | <u32>v));
    unchecked((r[i + words + 1] = <u32>(v >> 32)));
  }
  while (r.length > 0 && r[r.length - 1] == 0) r.pop();
  return r;
}

function natShr1(a: Array<u32>): void {
  for (let i = 0; i < a.length; i++) {
    let v = unchecked(a[i]) >>> 1;
    if (i + 1 < a.length) v |= unchecked(a[i + 1]) << 31;
    unchecked((a[i] = v));
  }
  while (a.length > 0 && a[a.length - 1] == 0) a.pop();
}

function natCmp(a: Array<u32>, b: Array<u32>): i32 {
  if (a.length != b.length) return a.length < b.length ? -1 : 1;
  for (let i = a.length - 1; i >= 0; i--) {
    const x = unchecked(a[i]);
    const y = unchecked(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// a -= b, for a >= b.
function natSub(a: Array<u32>, b: Array<u32>): void {
  let borrow: i64 = 0;
  for (let i = 0; i < a.length; i++) {
    let t = <i64>unchecked(a[i]) - borrow - (i < b.length ? <i64>unchecked(b[i]) : 0);
    if (t < 0) {
      t += <i64>1 << 32;
      borrow = 1;
    } else {
      borrow = 0;
    }
    unchecked((a[i] = <u32>t));
  }
  while (a.length > 0 && a[a.length - 1] == 0) a.pop();
}

const POW10: StaticArray<f64> = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/**
 * Returns the float64 nearest the JSON number text at [p, p+n), and sets
 * floatOverflow when it is beyond the largest float64 (the result is then
 * ±Inf, as Go's).
 */
export function parseFloat(p: usize, n: i32): f64 {
  floatOverflow = false;
  const end = p + <usize>n;
  let neg = false;
  if (p < end && load<u8>(p) == 0x2d) {
    neg = true;
    p++;
  }
  // Significant digits (leading zeros dropped), at most MAX_DIGITS of them.
  const digits = new Uint8Array(MAX_DIGITS);
  let nd = 0;
  let dp = 0; // the value is 0.d1d2...dnd x 10^dp
  let sticky = false;
  let sawDot = false;
  for (; p < end; p++) {
    const c = load<u8>(p);
    if (c == 0x2e) {
      sawDot = true;
      continue;
    }
    if (c < 0x30 || c > 0x39) break;
    if (c == 0x30 && nd == 0) {
      if (sawDot) dp--;
      continue;
    }
    if (nd < MAX_DIGITS) {
      unchecked((digits[nd] = c - 0x30));
      nd++;
    } else if (c != 0x30) {
      sticky = true;
    }
    if (!sawDot) dp++;
  }
  if (p < end && (load<u8>(p) | 0x20) == 0x65) {
    p++;
    let esign = 1;
    if (p < end && (load<u8>(p) == 0x2b || load<u8>(p) == 0x2d)) {
      if (load<u8>(p) == 0x2d) esign = -1;
      p++;
    }
    let e = 0;
    for (; p < end; p++) {
      const c = load<u8>(p);
      if (c < 0x30 || c > 0x39) break;
      if (e < 100000) e = e * 10 + <i32>(c - 0x30);
    }
    dp += esign * e;
  }
  if (nd == 0) return neg ? -0.0 : 0.0;
  // Trailing zeros change nothing but the fast path's reach.
  while (nd > 1 && !sticky && unchecked(digits[nd - 1]) == 0) nd--;
  if (dp > 310) {
    floatOverflow = true;
    return neg ? -Infinity : Infinity;
  }
  if (dp < -330) return neg ? -0.0 : 0.0;
  const exp10 = dp - nd; // value = D x 10^exp10, D the digits as an integer

  if (nd <= 15 && !sticky && exp10 >= -22 && exp10 <= 22) {
    let d: f64 = 0;
    for (let i = 0; i < nd; i++) d = d * 10 + <f64>unchecked(digits[i]);
    const f = exp10 >= 0 ? d * unchecked(POW10[exp10]) : d / unchecked(POW10[-exp10]);
    return neg ? -f : f;
  }

  // num / den = D x 10^exp10.
  let num = new Array<u32>();
  for (let i = 0; i < nd; i++) {
    natMulSmall(num, 10);
    natAddSmall(num, unchecked(digits[i]));
  }
  let den = new Array<u32>();
  den.push(1);
  if (exp10 >= 0) natMulPow10(num, exp10);
  else natMulPow10(den, -exp10);

  // Scale by 2^k so that the quotient has 54 or 55 bits.
  const k = 54 - (natBitLen(num) - natBitLen(den));
  if (k > 0) num = natShl(num, k);
  else if (k < 0) den = natShl(den, -k);
  // Long division, one quotient bit at a time: q < 2^56.
  let d = natShl(den, 55);
  let q: u64 = 0;
  for (let i = 55; i >= 0; i--) {
    if (natCmp(num, d) >= 0) {
      natSub(num, d);
      q |= <u64>1 << <u64>i;
    }
    natShr1(d);
  }
  if (num.length != 0) sticky = true;
  let e2 = 1 - k; // value = (q / 2) x 2^e2
  // Bring q to 54 bits: 53 of mantissa and a half bit.
  while (q >= <u64>1 << 54) {
    if (q & 1) sticky = true;
    q >>= 1;
    e2++;
  }
  let m: u64;
  let half: bool;
  let bits: u64;
  if (e2 < -1074) {
    // Subnormal: the quantum is 2^-1074.
    const s = -1074 - e2 + 1; // bits of q below the quantum
    if (s > 55) {
      m = 0;
      half = false;
      sticky = true;
    } else {
      m = q >> <u64>s;
      half = ((q >> <u64>(s - 1)) & 1) != 0;
      if ((q & ((<u64>1 << <u64>(s - 1)) - 1)) != 0) sticky = true;
    }
    if (half && (sticky || (m & 1) != 0)) m++;
    bits = m; // m <= 2^52: a subnormal, or the smallest normal
  } else {
    m = q >> 1;
    half = (q & 1) != 0;
    if (half && (sticky || (m & 1) != 0)) m++;
    if (m == <u64>1 << 53) {
      m >>= 1;
      e2++;
    }
    if (e2 > 971) {
      floatOverflow = true;
      return neg ? -Infinity : Infinity;
    }
    bits = (<u64>(e2 + 52 + 1023) << 52) | (m & ((<u64>1 << 52) - 1));
  }
  const f = reinterpret<f64>(bits);
  return neg ? -f : f;
}
