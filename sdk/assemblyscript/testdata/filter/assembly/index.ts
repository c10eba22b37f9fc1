// Test operator (filter): keeps values starting with "k", rejects those
// starting with "r", drops the rest.
import { Record, filter, reject } from "../../../assembly";
export * from "../../../assembly/exports/stream";

filter((r: Record): bool => {
  if (r.value.length == 0) return false;
  const c = r.value[0];
  if (c == 0x72) {
    reject("no r");
    return true; // ignored: a rejected record is not forwarded
  }
  return c == 0x6b;
});
