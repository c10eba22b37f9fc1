// The exports of a map, filter, flatmap or keyed operator. An operator's
// entry file (assembly/index.ts) re-exports them with one line:
//
//   export * from "<path to sdk/assemblyscript>/assembly/exports/stream";
//
// AssemblyScript exports from a module only what its entry file exports.

import { beginCall, endCall } from "../arena";
import { doProcess } from "../stream";

export { sluice_abi_version, sluice_alloc, sluice_configure, sluice_features, sluice_kinds } from "./common";

/** sluice_process: runs the registered handler over one encoded batch. */
export function sluice_process(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doProcess(ptr, len);
  endCall();
  return status;
}
