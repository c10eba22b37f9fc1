import { Bytes } from "./bytes";

/** Header is one name/value pair carried with a record, like a NATS header. */
export class Header {
  constructor(public name: Bytes, public value: Bytes) {}
}

/**
 * Record is one event as an operator sees it: a key, a value, an event time
 * and headers.
 *
 * A Record handed to a handler aliases the batch the host wrote into guest
 * memory: its key, value and headers are valid only until the handler
 * returns, and the SDK reuses the Record and its key and value Bytes for
 * the next record (clone() copies what must be kept). A handler may change
 * the bytes in place (upper-case a value) and may replace any field.
 */
export class Record {
  /** The record's key; keyed operators partition and keep state by it. */
  key: Bytes;
  /** The record's payload. */
  value: Bytes;
  /** Event time in nanoseconds since the Unix epoch. */
  time: i64;
  /**
   * The position, in the operator's inputs list of the pipeline file, of
   * the input the record arrived on: 0 for an operator with one input. A
   * join tells its sides apart by it. Set on the records the SDK hands a
   * handler; ignored on the records a handler returns or emits.
   */
  input: i32 = 0;
  // The headers, or null for none (no array is made for them).
  private hdrs: Array<Header> | null;

  constructor(key: Bytes = new Bytes(), value: Bytes = new Bytes(), time: i64 = 0, headers: Array<Header> | null = null) {
    this.key = key;
    this.value = value;
    this.time = time;
    this.hdrs = headers;
  }

  /** The headers, in order; names may repeat. */
  get headers(): Array<Header> {
    let h = this.hdrs;
    if (h == null) {
      h = new Array<Header>();
      this.hdrs = h;
    }
    return h;
  }

  set headers(h: Array<Header>) {
    this.hdrs = h;
  }

  /** The number of headers. */
  get headerCount(): i32 {
    const h = this.hdrs;
    return h == null ? 0 : h.length;
  }

  /**
   * Points the record at new fields: the SDK reuses one Record for the
   * input records of a call, as Go's SDK does for MapInPlace.
   */
  reset(key: Bytes, value: Bytes, time: i64, headers: Array<Header> | null): void {
    this.key = key;
    this.value = value;
    this.time = time;
    this.hdrs = headers;
  }

  /** The headers array as it is, null when there are none and none was asked for. */
  get headersOrNull(): Array<Header> | null {
    return this.hdrs;
  }

  /**
   * Returns the value of the first header called name (compared byte for
   * byte with name's UTF-8), or null when there is none.
   */
  header(name: string): Bytes | null {
    const h = this.hdrs;
    if (h == null) return null;
    for (let i = 0; i < h.length; i++) {
      const e = unchecked(h[i]);
      if (e.name.equalsString(name)) return e.value;
    }
    return null;
  }

  /**
   * Sets the value of the first header called name, or appends a header
   * when there is none. value is not copied.
   */
  setHeader(name: string, value: Bytes): void {
    const h = this.hdrs;
    if (h != null) {
      for (let i = 0; i < h.length; i++) {
        const e = unchecked(h[i]);
        if (e.name.equalsString(name)) {
          e.value = value;
          return;
        }
      }
    }
    this.headers.push(new Header(Bytes.fromString(name), value));
  }

  /** Returns a deep copy that owns its bytes (in the call's arena). */
  clone(): Record {
    const c = new Record(this.key.copy(), this.value.copy(), this.time);
    c.input = this.input;
    const h = this.hdrs;
    if (h != null) {
      const hs = new Array<Header>(h.length);
      for (let i = 0; i < h.length; i++) {
        const e = unchecked(h[i]);
        hs[i] = new Header(e.name.copy(), e.value.copy());
      }
      c.hdrs = hs;
    }
    return c;
  }

  /** The number of bytes the record takes in an encoded batch. */
  encodedSize(): i32 {
    let n = 4 + 28 + this.key.length + this.value.length;
    const h = this.hdrs;
    if (h != null) {
      for (let i = 0; i < h.length; i++) {
        const e = unchecked(h[i]);
        n += 8 + e.name.length + e.value.length;
      }
    }
    return n;
  }
}

/**
 * Writes the encoding of r (ABI.md section 4) with origin at p, which has
 * room for r.encodedSize() bytes, and returns the address after it.
 */
export function writeRecord(p: usize, origin: u32, r: Record, size: i32): usize {
  store<u32>(p, <u32>(size - 4));
  store<u32>(p, origin, 4);
  store<u32>(p, 0, 8); // flags: an output has no input
  store<i64>(p, r.time, 12);
  const k = r.key;
  store<u32>(p, <u32>k.length, 20);
  memory.copy(p + 24, k.ptr, <usize>k.length);
  p += 24 + <usize>k.length;
  const v = r.value;
  store<u32>(p, <u32>v.length);
  memory.copy(p + 4, v.ptr, <usize>v.length);
  p += 4 + <usize>v.length;
  const h = r.headersOrNull;
  if (h == null) {
    store<u32>(p, 0);
    return p + 4;
  }
  store<u32>(p, <u32>h.length);
  p += 4;
  for (let i = 0; i < h.length; i++) {
    const e = unchecked(h[i]);
    store<u32>(p, <u32>e.name.length);
    memory.copy(p + 4, e.name.ptr, <usize>e.name.length);
    p += 4 + <usize>e.name.length;
    store<u32>(p, <u32>e.value.length);
    memory.copy(p + 4, e.value.ptr, <usize>e.value.length);
    p += 4 + <usize>e.value.length;
  }
  return p;
}
