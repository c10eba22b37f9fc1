import * as host from "./host";
import { stringUtf8Len, writeString } from "./utf8";

/** Log levels of the host's log function (ABI.md section 3). */
export enum Level {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
}

/**
 * Writes msg to the host's log at level. The host adds the plugin's name,
 * keeps the first 1 KiB of a message and the first 64 messages of a call.
 * The last Error message of a call is the reason the host reports when the
 * call fails.
 */
export function log(level: Level, msg: string): void {
  const n = stringUtf8Len(msg);
  // A stack-like scratch: the message is copied out by the host during the
  // call, so the arena bytes may be reused afterwards.
  const p = heap.alloc(<usize>n);
  writeString(p, msg);
  host.log(<i32>level, p, <usize>n);
  heap.free(p); // the last block: given back at once
}

/** log(Level.Debug, msg). */
export function logDebug(msg: string): void {
  log(Level.Debug, msg);
}

/** log(Level.Info, msg). */
export function logInfo(msg: string): void {
  log(Level.Info, msg);
}

/** log(Level.Warn, msg). */
export function logWarn(msg: string): void {
  log(Level.Warn, msg);
}

/** log(Level.Error, msg). */
export function logError(msg: string): void {
  log(Level.Error, msg);
}

/**
 * Logs msg at Error and traps: for bugs and misuse, where Go's SDK panics.
 * The host fails the call in progress and replaces the instance; the
 * message is the last error it saw from the call.
 */
export function panic(msg: string): void {
  log(Level.Error, msg);
  unreachable();
}
