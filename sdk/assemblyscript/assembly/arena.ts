// The SDK's memory: the stub runtime's heap used as a bump arena that is
// reset on every guest call.
//
// `--runtime stub` has no garbage collector: every `new`, string and array
// takes memory from a bump pointer that only moves up (its __free gives
// back the last block only). An operator that ran for a day would run out
// of memory. So the SDK cuts the heap in three, bottom to top:
//
//   1. persistent: what the module's top-level code allocated when the
//      instance started, and what sluice_configure allocated (the
//      operator's parsed configuration, the configuration bytes
//      themselves). Never released.
//   2. the input region(s) that sluice_alloc hands the host for the next
//      call. Released by the next sluice_alloc (the ABI's lifetime rule:
//      "until the next sluice_alloc", which also covers the apply region
//      the host reuses for many sluice_apply calls).
//   3. the call's arena: everything allocated while the SDK serves one
//      call (records, outputs, strings, a handler's objects). Released
//      when the next call starts.
//
// The stub keeps its bump pointer private; the SDK reads and moves it
// through the stub's own __alloc/__free (see heapTop and heapReset), which
// relies on the stub's block layout: a u32 size word before each block.
// assemblyscript is pinned to 0.28.20 (package.json), and the SDK's tests
// check that memory stays flat over many calls.

// @ts-ignore: decorator
@inline const BLOCK_OVERHEAD: usize = 4;

/** The largest sluice_alloc request served (1 GiB); larger ones get 0. */
// @ts-ignore: decorator
@inline export const MAX_ALLOC: usize = 1 << 30;

// The heap top after the persistent allocations, or 0 before the first
// sluice_alloc; the heap top after the input region(s); whether a region
// was handed out and not yet consumed by a call.
let persistTop: usize = 0;
let callTop: usize = 0;
let pending = false;
// Counts the releases of the call's arena, so that a buffer kept across
// calls can tell that its storage was released (ByteBuffer does).
let epoch: u32 = 0;

/** Returns the number of times the call's arena was released so far. */
export function arenaEpoch(): u32 {
  return epoch;
}

/**
 * Reports whether the memory at p outlives calls: it was allocated by the
 * module's top-level code or by sluice_configure (or is static data).
 */
export function isPersistent(p: usize): bool {
  return persistTop == 0 || p < persistTop;
}

/** Returns the stub heap's bump pointer, leaving it where it is. */
export function heapTop(): usize {
  // A zero-size block is the last block, so __free gives it back.
  const p = heap.alloc(0);
  heap.free(p);
  return p - BLOCK_OVERHEAD;
}

/**
 * Moves the stub heap's bump pointer back to mark, a value heapTop
 * returned earlier: everything allocated since is released.
 */
function heapReset(mark: usize): void {
  // Make the block at mark span everything up to the top, then free it as
  // the last block.
  const p = heap.alloc(0);
  const top = p + <usize>load<u32>(p - BLOCK_OVERHEAD);
  store<u32>(mark, <u32>(top - mark - BLOCK_OVERHEAD));
  heap.free(mark + BLOCK_OVERHEAD);
}

/**
 * Grows memory so that size more bytes fit above the heap top, and reports
 * whether it could: sluice_alloc returns 0 rather than trapping when the
 * instance's memory limit is reached.
 */
function reserve(size: usize): bool {
  const need = heapTop() + size + 64;
  const have = (<usize>memory.size()) << 16;
  if (need <= have) return true;
  const pages = <i32>((need - have + 0xffff) >>> 16);
  return memory.grow(pages) >= 0;
}

/**
 * Implements sluice_alloc: size bytes for the host to fill, or 0. Unless a
 * region is still pending, this first releases the previous call's arena
 * and input region.
 */
export function allocInput(size: i32): usize {
  if (size < 0 || <usize>size > MAX_ALLOC) return 0;
  if (!pending) {
    if (persistTop == 0) persistTop = heapTop();
    else heapReset(persistTop);
    epoch++;
  }
  if (!reserve(<usize>size)) return 0;
  const p = heap.alloc(<usize>size);
  callTop = heapTop();
  pending = true;
  return p;
}

/**
 * Starts serving a consuming call: releases what an earlier call on the
 * same input region allocated (sluice_apply runs many times per region).
 */
export function beginCall(): void {
  if (callTop != 0) heapReset(callTop);
  epoch++;
}

/** Ends a consuming call: the input region is consumed. */
export function endCall(): void {
  pending = false;
}

/**
 * Ends sluice_configure: what it allocated becomes persistent, and the
 * configuration region with it.
 */
export function endConfigure(): void {
  pending = false;
  persistTop = heapTop();
  callTop = persistTop;
}

/** Allocates n bytes in the current arena, uninitialised. */
// @ts-ignore: decorator
@inline export function rawAlloc(n: usize): usize {
  return heap.alloc(n);
}
