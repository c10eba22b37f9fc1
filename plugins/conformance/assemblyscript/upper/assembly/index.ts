// upper: the conformance twin of plugins/upper. A map that upper-cases the
// ASCII letters a-z of each record's value in place; every other byte,
// UTF-8 sequences included, is left as it is. Key, time and headers pass
// unchanged, and the SDK forwards each record's encoding without encoding
// it again.

import { Record, map } from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/stream";

const ONES: u64 = 0x0101010101010101;
const HIGHS: u64 = 0x8080808080808080;

// upper8 upper-cases the ASCII lower-case letters among the eight bytes of
// w: for a byte b below 0x80, b + (0x80 - 'a') has its high bit set when
// b >= 'a', and b + (0x80 - 'z' - 1) when b > 'z'; a byte with its high bit
// set is not ASCII and is left alone. The sums cannot carry into the next
// byte, since every byte is below 0x80 once masked.
// @ts-ignore: decorator
@inline function upper8(w: u64): u64 {
  const low = w & ~HIGHS;
  const geA = low + (0x80 - 0x61) * ONES;
  const gtZ = low + (0x80 - 0x7a - 1) * ONES;
  const lower = (geA ^ gtZ) & ~w & HIGHS;
  return w ^ (lower >> 2);
}

function upper(r: Record): void {
  let p = r.value.ptr;
  const end = p + <usize>r.value.length;
  for (; end - p >= 8; p += 8) store<u64>(p, upper8(load<u64>(p)));
  for (; p < end; p++) {
    const c = load<u8>(p);
    if (c >= 0x61 && c <= 0x7a) store<u8>(p, c - 0x20);
  }
}

map(upper);
