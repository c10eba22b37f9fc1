// enrich: the conformance twin of plugins/enrich. A flatmap that filters
// and enriches records whose values are JSON objects, configured with
//
//   config:
//     require: [user, amount]     # drop records lacking any of these fields
//     min: {amount: 10}           # drop records whose field is under the minimum
//     set: {source: web, v: 2}    # add these fields, replacing any present
//
// Same configuration, same outputs, same dead letters and the same
// messages as the Go plugin, which reads the configuration and the records
// with encoding/json: json.ts reproduces what it accepts and how it words
// a refusal, float.ts its float64 parsing.

import {
  ByteBuffer, Bytes, Emitter, Record, configure, decodeRune, flatMap, quote, reject,
} from "../../../../../sdk/assemblyscript/assembly";
export * from "../../../../../sdk/assemblyscript/assembly/exports/stream";
import { Member, compact, items, jsonEOF, jsonError, kindOf, readObject, scan, skipSpace, unquote } from "./json";
import { floatOverflow, parseFloat } from "./float";

// ---- The rules ----------------------------------------------------------------
//
// Built by the configure handler, so they live as long as the instance
// (the SDK keeps what configure allocates).

let requireFields = new Array<Bytes>(); // in the configuration's order
let minFields = new Array<Bytes>(); // sorted
let minValues = new Array<f64>();
let setMembers = new Array<Member>(); // in the configuration's order, values compacted

// ---- Configuration ----------------------------------------------------------------

const WANT = " (want {\"require\": [names], \"min\": {name: number}, \"set\": {name: value}})";
const RAW_TYPE = "struct { Require []string \"json:\\\"require\\\"\"; Min map[string]float64 \"json:\\\"min\\\"\"; Set json.RawMessage \"json:\\\"set\\\"\" }";

// The type of a JSON value in encoding/json's type errors.
function valueKind(v: Bytes): string {
  switch (v[0]) {
    case 0x22: return "string";
    case 0x7b: return "object";
    case 0x5b: return "array";
    case 0x74:
    case 0x66: return "bool";
    case 0x6e: return "null";
  }
  return "number";
}

function fieldTypeError(value: string, field: string, type: string): string {
  return "json: cannot unmarshal " + value + " into Go struct field ." + field + " of type " + type;
}

// Reports whether name matches target (upper-case ASCII) as encoding/json
// matches a struct field case-insensitively: ASCII letters in either case,
// and the non-ASCII runes whose case folding reaches an ASCII letter
// (U+017F for S, U+212A for K).
function foldEquals(name: Bytes, target: string): bool {
  let p = name.ptr;
  const end = name.ptr + <usize>name.length;
  let i = 0;
  while (p < end) {
    if (i >= target.length) return false;
    const want = <i32>target.charCodeAt(i);
    let c = <i32>load<u8>(p);
    if (c < 0x80) {
      if (c >= 0x61 && c <= 0x7a) c -= 0x20;
      p++;
    } else {
      const rw = decodeRune(p, end);
      const r = <i32>rw;
      p += <usize>(rw >>> 32);
      if (r == 0x17f) c = 0x53;
      else if (r == 0x212a) c = 0x4b;
      else return false;
    }
    if (c != want) return false;
    i++;
  }
  return i == target.length;
}

const FIELD_NONE = 0;
const FIELD_REQUIRE = 1;
const FIELD_MIN = 2;
const FIELD_SET = 3;

function fieldOf(name: Bytes): i32 {
  if (name.equalsString("require")) return FIELD_REQUIRE;
  if (name.equalsString("min")) return FIELD_MIN;
  if (name.equalsString("set")) return FIELD_SET;
  if (foldEquals(name, "REQUIRE")) return FIELD_REQUIRE;
  if (foldEquals(name, "MIN")) return FIELD_MIN;
  if (foldEquals(name, "SET")) return FIELD_SET;
  return FIELD_NONE;
}

// The capacities a Go []string takes as encoding/json grows it one
// element at a time (reflect.Value.Grow): a decoded "require" list that
// is shorter than an earlier one in the same configuration keeps the
// earlier one's elements where it decodes a null, up to the capacity.
const CAPS: StaticArray<i32> = [
  1, 2, 4, 8, 16, 32, 71, 143, 303, 591, 1023, 1535, 2560, 3584, 5120, 6656, 8704, 11264, 14336, 18432,
  23552, 29696, 37376, 47104, 59392, 74752, 93696, 117760, 147456, 184832, 231424,
];

function grownCap(c: i32): i32 {
  for (let i = 0; i < CAPS.length; i++) if (CAPS[i] > c) return CAPS[i];
  return c + c / 4;
}

// The decoded configuration, as encoding/json fills the Go plugin's struct.
let reqStore = new Array<Bytes>(); // the slice's backing array: its length is the capacity
let reqLen = 0;
let minNames = new Array<Bytes>(); // the map, in insertion order
let minVals = new Array<f64>();
let setRaw = new Bytes();

function decodeRequire(v: Bytes): string | null {
  const c = v[0];
  if (c == 0x6e) {
    reqStore = new Array<Bytes>();
    reqLen = 0;
    return null;
  }
  if (c != 0x5b) return fieldTypeError(valueKind(v), "require", "[]string");
  const elems = items(v);
  let i = 0;
  for (; i < elems.length; i++) {
    if (i >= reqStore.length) {
      const grown = new Array<Bytes>(grownCap(reqStore.length));
      for (let j = 0; j < grown.length; j++) grown[j] = j < reqLen ? reqStore[j] : new Bytes();
      reqStore = grown;
    }
    if (i >= reqLen) reqLen = i + 1;
    const e = elems[i];
    const k = e[0];
    if (k == 0x22) reqStore[i] = unquote(e);
    else if (k != 0x6e) return fieldTypeError(valueKind(e), "require", "string");
  }
  if (i < reqLen) reqLen = i;
  if (i == 0) {
    reqStore = new Array<Bytes>();
    reqLen = 0;
  }
  return null;
}

function decodeMin(v: Bytes): string | null {
  const c = v[0];
  if (c == 0x6e) {
    minNames = new Array<Bytes>();
    minVals = new Array<f64>();
    return null;
  }
  if (c != 0x7b) return fieldTypeError(valueKind(v), "min", "map[string]float64");
  const kv = items(v);
  for (let i = 0; i + 1 < kv.length; i += 2) {
    const name = unquote(kv[i]);
    const e = kv[i + 1];
    let f: f64 = 0;
    const k = e[0];
    if (k == 0x2d || (k >= 0x30 && k <= 0x39)) {
      f = parseFloat(e.ptr, e.length);
      if (floatOverflow) return fieldTypeError("number " + e.toString(), "min", "float64");
    } else if (k != 0x6e) {
      return fieldTypeError(valueKind(e), "min", "float64");
    }
    let j = 0;
    while (j < minNames.length && !minNames[j].equals(name)) j++;
    if (j < minNames.length) {
      minVals[j] = f;
    } else {
      minNames.push(name);
      minVals.push(f);
    }
  }
  return null;
}

// Decodes the configuration's JSON text v into the fields above, with
// encoding/json's rules for the Go plugin's struct (unknown fields
// refused), and returns the first error, or null.
function decodeConfig(v: Bytes): string | null {
  const c = v[0];
  if (c == 0x6e) return null;
  if (c != 0x7b) return "json: cannot unmarshal " + valueKind(v) + " into Go value of type " + RAW_TYPE;
  const kv = items(v);
  for (let i = 0; i + 1 < kv.length; i += 2) {
    const name = unquote(kv[i]);
    const value = kv[i + 1];
    let err: string | null = null;
    switch (fieldOf(name)) {
      case FIELD_REQUIRE:
        err = decodeRequire(value);
        break;
      case FIELD_MIN:
        err = decodeMin(value);
        break;
      case FIELD_SET:
        setRaw = value;
        break;
      default:
        err = "json: unknown field " + quote(name);
    }
    if (err != null) return err;
  }
  return null;
}

function bytesLess(a: Bytes, b: Bytes): bool {
  const n = min(a.length, b.length);
  const c = memory.compare(a.ptr, b.ptr, <usize>n);
  return c < 0 || (c == 0 && a.length < b.length);
}

// parseRules reads the operator's configuration, as the Go plugin's
// parseRules; null means no rules.
function parseRules(config: Bytes): string | null {
  const end = config.ptr + <usize>config.length;
  const vend = scan(config.ptr, end);
  if (vend == 0) {
    // json.Decoder reports an input that ends inside the value as
    // io.ErrUnexpectedEOF.
    return "enrich configuration: " + (jsonEOF ? "unexpected EOF" : jsonError!) + WANT;
  }
  const vstart = skipSpace(config.ptr, end);
  const err = decodeConfig(new Bytes(vstart, <i32>(vend - vstart)));
  if (err != null) return "enrich configuration: " + err + WANT;

  requireFields = new Array<Bytes>();
  for (let i = 0; i < reqLen; i++) {
    if (reqStore[i].length == 0) return "enrich configuration: \"require\" holds an empty field name";
    requireFields.push(reqStore[i]);
  }
  // The minimums in field order, for a deterministic order of checks.
  minFields = new Array<Bytes>();
  minValues = new Array<f64>();
  for (let i = 0; i < minNames.length; i++) {
    let j = minFields.length;
    minFields.push(minNames[i]);
    minValues.push(minVals[i]);
    while (j > 0 && bytesLess(minFields[j], minFields[j - 1])) {
      const f = minFields[j];
      minFields[j] = minFields[j - 1];
      minFields[j - 1] = f;
      const m = minValues[j];
      minValues[j] = minValues[j - 1];
      minValues[j - 1] = m;
      j--;
    }
  }
  setMembers = new Array<Member>();
  if (setRaw.length > 0 && !setRaw.equalsString("null")) {
    const set = readObject(setRaw);
    if (set == null) return "enrich configuration: \"set\": " + jsonError!;
    for (let i = 0; i < set.length; i++) {
      if (find(set, i, set[i].name) >= 0) {
        return "enrich configuration: \"set\" names field " + quote(set[i].name) + " twice";
      }
      const b = new ByteBuffer();
      compact(b, set[i].value);
      set[i].value = b.toBytes();
    }
    setMembers = set;
  }
  return null;
}

// find returns the index of the last of the first n members called name
// (the one a JSON decoder keeps), or -1.
function find(obj: Array<Member>, n: i32, name: Bytes): i32 {
  for (let i = n - 1; i >= 0; i--) {
    if (obj[i].name.equals(name)) return i;
  }
  return -1;
}

// ---- Records ----------------------------------------------------------------

function enrich(r: Record, out: Emitter): void {
  const obj = readObject(r.value);
  if (obj == null) {
    reject("value is not a JSON object: " + jsonError!);
    return;
  }
  for (let i = 0; i < requireFields.length; i++) {
    if (find(obj, obj.length, requireFields[i]) < 0) return;
  }
  for (let i = 0; i < minFields.length; i++) {
    const field = minFields[i];
    const at = find(obj, obj.length, field);
    if (at < 0) return;
    const v = obj[at].value;
    const c = v.length == 0 ? 0 : <u32>v[0];
    if (v.length == 0 || (c != 0x2d && (c < 0x30 || c > 0x39))) {
      reject("field " + quote(field) + " is " + kindOf(v) + ", not a number");
      return;
    }
    if (parseFloat(v.ptr, v.length) < minValues[i]) return;
  }
  const b = new ByteBuffer(r.value.length + 64);
  b.byte(0x7b);
  for (let i = 0; i < obj.length; i++) {
    const m = obj[i];
    if (i > 0) b.byte(0x2c);
    b.bytes(m.key).byte(0x3a);
    const s = find(setMembers, setMembers.length, m.name);
    b.bytes(s >= 0 ? setMembers[s].value : m.value);
  }
  let n = obj.length;
  for (let i = 0; i < setMembers.length; i++) {
    const s = setMembers[i];
    if (find(obj, obj.length, s.name) >= 0) continue;
    if (n > 0) b.byte(0x2c);
    n++;
    b.bytes(s.key).byte(0x3a).bytes(s.value);
  }
  b.byte(0x7d);
  r.value = b.toBytes();
  out.emit(r);
}

configure(parseRules);
flatMap(enrich);
