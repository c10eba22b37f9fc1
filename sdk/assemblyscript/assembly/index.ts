// The Sluice SDK for AssemblyScript: write a Sluice operator in
// AssemblyScript, compiled with `--runtime stub` to a WebAssembly module
// that the Sluice host runs in a sandbox. See ../README.md.
//
// An operator's entry file imports what it uses from here, registers one
// handler at its top level, and re-exports the ABI exports of its kind:
//
//   import { Record, map } from "<sdk>/assembly";
//   export * from "<sdk>/assembly/exports/stream";
//   map((r: Record): void => { ... });

export * from "./abi";
export { Bytes } from "./bytes";
export { ByteBuffer } from "./buffer";
export { Header, Record } from "./record";
export { Emitter, configure, reject, trimSpace } from "./core";
export { map, filter, flatMap, keyed } from "./stream";
export { State, tableId } from "./state";
export { Call, Effect, Key, KeyValue, OpOutcome, Outcome, Planner, transactional } from "./txn";
export { FIRING_EARLY, FIRING_LATE, FIRING_ON_TIME, Window, aggregate, windowFunc } from "./window";
export { joinFunc } from "./join";
export { Level, log, logDebug, logInfo, logWarn, logError, panic } from "./log";
export { isPrint, quote, quoteString } from "./quote";
export { decodeRune, encodeRune, RUNE_ERROR } from "./utf8";
