// words: a flatmap operator that splits each record's value into words and
// emits one record per word, keyed by the word, lower-cased: the first
// half of a word count (the keyed half counts the records of each key).
//
// Its configuration is the shortest word it keeps, a JSON number (default
// 1): `config: 3` drops "a" and "of".
//
// Build, from this directory (see ../README.md):
//
//   npx --no-install asc assembly/index.ts -O3 --runtime stub --noAssert --use abort= -o example.wasm

import { Bytes, Emitter, Record, configure, flatMap, reject } from "../../assembly";
// The ABI exports of a map, filter, flatmap or keyed operator.
export * from "../../assembly/exports/stream";

// The configuration. Set by the configure handler, which runs once per
// instance before any record; what it allocates lives as long as the
// instance.
let minLength = 1;

configure((config: Bytes): string | null => {
  if (config.equalsString("null")) return null; // no config: the default
  let n = 0;
  for (let i = 0; i < config.length; i++) {
    const c = config[i];
    if (c < 0x30 || c > 0x39 || n > 1000000) return "want the shortest word to keep, a number; got " + config.toString();
    n = n * 10 + (c - 0x30);
  }
  minLength = n;
  return null;
});

// isWordByte reports whether c belongs to a word: ASCII letters and
// digits, and every byte of a UTF-8 sequence (non-ASCII letters).
function isWordByte(c: u8): bool {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c >= 0x80;
}

flatMap((r: Record, out: Emitter): void => {
  const v = r.value;
  // Lower-case in place: the input record is ours until we return.
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (c >= 0x41 && c <= 0x5a) v[i] = c + 0x20;
  }
  let start = -1;
  for (let i = 0; i <= v.length; i++) {
    if (i < v.length && isWordByte(v[i])) {
      if (start < 0) start = i;
      continue;
    }
    if (start >= 0 && i - start >= minLength) {
      const w = v.slice(start, i);
      // emitKV encodes at once: w may alias the input.
      out.emitKV(w, w, r.time);
    }
    start = -1;
  }
  if (v.length > 0 && v[0] == 0x00) reject("a value starting with NUL is not text");
});
