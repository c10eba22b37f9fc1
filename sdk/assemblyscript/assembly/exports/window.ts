// The exports of an aggregate or window operator (abi/ABI.md section 13).
// An operator's entry file (assembly/index.ts) re-exports them with one
// line:
//
//   export * from "<path to sdk/assemblyscript>/assembly/exports/window";
//
// AssemblyScript exports from a module only what its entry file exports.

import { beginCall, endCall } from "../arena";
import { doAggAdd, doAggFire, doAggMerge, doWindowFire } from "../window";

export { sluice_abi_version, sluice_alloc, sluice_configure, sluice_features, sluice_kinds } from "./common";

/** sluice_agg_add: folds each group's records into its accumulator. */
export function sluice_agg_add(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doAggAdd(ptr, len);
  endCall();
  return status;
}

/** sluice_agg_merge: merges pairs of accumulators. */
export function sluice_agg_merge(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doAggMerge(ptr, len);
  endCall();
  return status;
}

/** sluice_agg_fire: emits the results of firing windows from their accumulators. */
export function sluice_agg_fire(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doAggFire(ptr, len);
  endCall();
  return status;
}

/** sluice_window_fire: emits the results of firing windows from their records. */
export function sluice_window_fire(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doWindowFire(ptr, len);
  endCall();
  return status;
}
