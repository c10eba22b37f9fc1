// Test operator that registers no handler.
export * from "../../../assembly/exports/stream";
