// Test operator that registers two handlers: every call fails.
import { Emitter, Record, flatMap, map } from "../../../assembly";
export * from "../../../assembly/exports/stream";

map((r: Record): void => {});
flatMap((r: Record, out: Emitter): void => {});
