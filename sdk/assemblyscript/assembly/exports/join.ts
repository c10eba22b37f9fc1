// The exports of a join operator (abi/ABI.md section 14). An operator's
// entry file (assembly/index.ts) re-exports them with one line:
//
//   export * from "<path to sdk/assemblyscript>/assembly/exports/join";
//
// AssemblyScript exports from a module only what its entry file exports.

import { beginCall, endCall } from "../arena";
import { doJoin } from "../join";

export { sluice_abi_version, sluice_alloc, sluice_configure, sluice_features, sluice_kinds } from "./common";

/** sluice_join: emits the results of pairs of records a join matched. */
export function sluice_join(ptr: usize, len: usize): i32 {
  beginCall();
  const status = doJoin(ptr, len);
  endCall();
  return status;
}
