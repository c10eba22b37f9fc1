// The exports every Sluice module has: sluice_abi_version, sluice_kinds,
// sluice_features, sluice_alloc and sluice_configure. An operator re-exports them through
// the exports of its kind (exports/stream.ts, exports/txn.ts,
// exports/window.ts or exports/join.ts), never directly.

import { ABI_VERSION, FEATURE_INPUTS } from "../abi";
import { allocInput } from "../arena";
import { doConfigure, kindBits } from "../core";

/** sluice_abi_version: the ABI version this module was built for. */
export function sluice_abi_version(): i32 {
  return ABI_VERSION;
}

/** sluice_kinds: the operator kind of the registered handler, as its bit; 0 when none is usable. */
export function sluice_kinds(): i32 {
  return kindBits();
}

/** sluice_features: what the SDK understands beyond version 1: the input of each record. */
export function sluice_features(): i32 {
  return FEATURE_INPUTS;
}

/** sluice_alloc: size bytes for the host to write the next call's input into, or 0. */
export function sluice_alloc(size: i32): usize {
  return allocInput(size);
}

/** sluice_configure: the operator's configuration, as JSON (empty: none). */
export function sluice_configure(ptr: usize, len: usize): i32 {
  return doConfigure(ptr, len);
}
