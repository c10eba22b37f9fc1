// The exports of a transactional operator. An operator's entry file
// (assembly/index.ts) re-exports them with one line:
//
//   export * from "<path to sdk/assemblyscript>/assembly/exports/txn";
//
// AssemblyScript exports from a module only what its entry file exports.

import { beginCall, endCall } from "../arena";
import { doApply, doPlan, doPost } from "../txn";

export { sluice_abi_version, sluice_alloc, sluice_configure, sluice_features, sluice_kinds } from "./common";

/** sluice_plan: declares the operations of a batch of events. */
export function sluice_plan(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doPlan(ptr, len);
  endCall();
  return status;
}

/** sluice_apply: computes one execution of one operation. */
export function sluice_apply(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doApply(ptr, len);
  endCall();
  return status;
}

/** sluice_post: emits the outputs of a batch of events from their outcomes. */
export function sluice_post(eventsPtr: usize, eventsLen: usize, outPtr: usize, outLen: usize): i32 {
  beginCall();
  const status = doPost(eventsPtr, eventsLen, outPtr, outLen);
  endCall();
  return status;
}
