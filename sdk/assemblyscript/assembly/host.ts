// The host functions of ABI version 1 (abi/ABI.md section 3 and 10.4),
// imported from module "sluice". A module imports only the functions its
// code reaches: the compiler leaves out an @external declaration nobody
// calls, so a stateless operator imports emit, reject and log, and nothing
// of the state or transactional functions.
//
// Operators use the typed wrappers of the SDK (Emitter, State, Call,
// Planner, log) rather than these; they are exported for SDKs built on
// this one and for tests.

// @ts-ignore: decorator
@external("sluice", "emit")
export declare function emit(ptr: usize, len: usize): void;

// @ts-ignore: decorator
@external("sluice", "reject")
export declare function reject(origin: u32, msgPtr: usize, msgLen: usize): void;

// @ts-ignore: decorator
@external("sluice", "table_id")
export declare function table_id(namePtr: usize, nameLen: usize): i32;

// @ts-ignore: decorator
@external("sluice", "state_get")
export declare function state_get(table: u32, keyPtr: usize, keyLen: usize, bufPtr: usize, bufCap: usize): i32;

// @ts-ignore: decorator
@external("sluice", "state_put")
export declare function state_put(table: u32, keyPtr: usize, keyLen: usize, valPtr: usize, valLen: usize): void;

// @ts-ignore: decorator
@external("sluice", "state_delete")
export declare function state_delete(table: u32, keyPtr: usize, keyLen: usize): void;

// @ts-ignore: decorator
@external("sluice", "log")
export declare function log(level: i32, ptr: usize, len: usize): void;

// @ts-ignore: decorator
@external("sluice", "txn_plan")
export declare function txn_plan(ptr: usize, len: usize): void;

// @ts-ignore: decorator
@external("sluice", "txn_get")
export declare function txn_get(table: u32, keyPtr: usize, keyLen: usize, bufPtr: usize, bufCap: usize): i32;

// @ts-ignore: decorator
@external("sluice", "txn_put")
export declare function txn_put(table: u32, keyPtr: usize, keyLen: usize, valPtr: usize, valLen: usize): i32;

// @ts-ignore: decorator
@external("sluice", "txn_delete")
export declare function txn_delete(table: u32, keyPtr: usize, keyLen: usize): i32;
