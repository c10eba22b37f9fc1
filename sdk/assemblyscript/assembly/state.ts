import * as host from "./host";
import { STATUS_NOT_FOUND } from "./abi";
import { arenaEpoch } from "./arena";
import { Bytes } from "./bytes";
import { panic } from "./log";
import { stringUtf8Len, writeString } from "./utf8";

// ---- Table handles ----------------------------------------------------------
//
// table_id answers do not change for the life of an instance, so they are
// cached. The cache lives in static memory, not in the heap, because the
// heap above the persistent part is released on every call (arena.ts) and
// a name is first resolved during a call. It holds the UTF-8 names
// back to back, each as a u32 handle, a u32 length and the bytes.

// @ts-ignore: decorator
@inline const CACHE_SIZE: usize = 2048;
const cache: usize = memory.data(<i32>CACHE_SIZE);
let cacheUsed: usize = 0;

/**
 * Returns the handle of the state table called name, or -1 when the
 * pipeline declares no such table for the operator. Handle 0
 * (DEFAULT_TABLE) is always the first declared table.
 */
export function tableId(name: string): i32 {
  const n = stringUtf8Len(name);
  const p = heap.alloc(<usize>n);
  writeString(p, name);
  // Look the name up in the cache.
  let c = cache;
  const end = cache + cacheUsed;
  while (c < end) {
    const len = load<u32>(c, 4);
    if (len == <u32>n && memory.compare(c + 8, p, <usize>n) == 0) {
      heap.free(p);
      return load<i32>(c);
    }
    c += 8 + <usize>len;
  }
  const id = host.table_id(p, <usize>n);
  if (id >= 0 && cacheUsed + 8 + <usize>n <= CACHE_SIZE) {
    store<i32>(end, id);
    store<u32>(end, <u32>n, 4);
    memory.copy(end + 8, p, <usize>n);
    cacheUsed += 8 + <usize>n;
  }
  heap.free(p);
  return id < 0 ? -1 : id;
}

// ---- Keyed state ------------------------------------------------------------

// The buffer State.get reads values into, in the call's arena: its
// address, capacity and the arena epoch it belongs to.
const INITIAL_SCRATCH: i32 = 256;
let scratchPtr: usize = 0;
let scratchCap: i32 = 0;
let scratchEpoch: u32 = 0;

/**
 * State reads and writes one key of a keyed operator's state: the key of
 * the record being handled, in one declared table. The SDK passes a State
 * bound to the operator's default table (the first the pipeline declares);
 * table() reaches the others. A State is valid only during the handler
 * call it was passed to.
 */
export class State {
  constructor(
    /** The table's handle. */
    public handle: u32,
    /** The key this State reads and writes: the record's key as it came in. */
    public key: Bytes,
  ) {}

  /**
   * Returns the value stored for the key, or null when there is none (an
   * empty value is not null). The value is in a buffer the SDK reuses: it
   * is valid until the next get on any State. Copy it to keep it.
   */
  get(): Bytes | null {
    if (scratchPtr == 0 || scratchEpoch != arenaEpoch()) {
      scratchPtr = heap.alloc(<usize>INITIAL_SCRATCH);
      scratchCap = INITIAL_SCRATCH;
      scratchEpoch = arenaEpoch();
    }
    const k = this.key;
    let n = host.state_get(this.handle, k.ptr, <usize>k.length, scratchPtr, <usize>scratchCap);
    if (n == STATUS_NOT_FOUND) return null;
    if (n < 0) panic("sluice: state_get returned the unknown status " + n.toString());
    if (n > scratchCap) {
      // Larger than the buffer: grow with headroom and ask again.
      scratchCap = n + n / 4;
      scratchPtr = heap.alloc(<usize>scratchCap);
      const m = host.state_get(this.handle, k.ptr, <usize>k.length, scratchPtr, <usize>scratchCap);
      if (m != n) panic("sluice: state_get reported " + m.toString() + " bytes after a retry with a " + scratchCap.toString() + "-byte buffer");
    }
    return new Bytes(scratchPtr, n);
  }

  /** Stores v as the key's value (possibly empty). The host copies v. */
  put(v: Bytes): void {
    const k = this.key;
    host.state_put(this.handle, k.ptr, <usize>k.length, v.ptr, <usize>v.length);
  }

  /** Removes the key's value; get then returns null. */
  delete(): void {
    const k = this.key;
    host.state_delete(this.handle, k.ptr, <usize>k.length);
  }

  /**
   * Returns a State for the same key in the table called name, which the
   * pipeline must declare for this operator (state: [...]). An undeclared
   * table traps, naming it: a bug in the operator or the pipeline.
   */
  table(name: string): State {
    const id = tableId(name);
    if (id < 0) panic("sluice: state table \"" + name + "\" is not declared for this operator (the pipeline's state: list)");
    return new State(<u32>id, this.key);
  }
}
