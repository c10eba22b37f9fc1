// Benchmark operator: a map that leaves every record as it is, so that
// BenchmarkWasmMap measures the SDK's own per-record cost.
import { Record, map } from "../../../assembly";
export * from "../../../assembly/exports/stream";

map((r: Record): void => {});
