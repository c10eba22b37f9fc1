// Constants of the Sluice guest ABI, version 1 (abi/ABI.md; package abi in
// Go is their executable form). The SDK uses them; operators rarely need
// them, since the SDK turns them into methods and return values.

/** The ABI version this SDK implements; sluice_abi_version returns it. */
export const ABI_VERSION: i32 = 1;

/** The bits of sluice_kinds' result, one per operator kind (ABI.md section 12). */
export const KIND_BIT_MAP: i32 = 1;
export const KIND_BIT_FILTER: i32 = 2;
export const KIND_BIT_FLATMAP: i32 = 4;
export const KIND_BIT_KEYED: i32 = 8;
export const KIND_BIT_TRANSACTIONAL: i32 = 16;
export const KIND_BIT_AGGREGATE: i32 = 32;
export const KIND_BIT_WINDOW: i32 = 64;
export const KIND_BIT_JOIN: i32 = 128;

/**
 * The bits of the one-byte value of a sluice_join group's head (ABI.md
 * section 14): which sides of the pair are present, in this order among
 * the group's members.
 */
/** JOIN_LEFT: the pair has a left record, the group's first member. */
export const JOIN_LEFT: u8 = 1;
/** JOIN_RIGHT: the pair has a right record, the group's last member. */
export const JOIN_RIGHT: u8 = 2;

/** The bits of sluice_features' result (ABI.md section 9). */
/** FEATURE_INPUTS: the module reads the input each record arrived on. */
export const FEATURE_INPUTS: i32 = 1;
/** The bits of a record's flags that hold its input (ABI.md section 4). */
export const FLAGS_INPUT: u32 = 0xffff;

/** Status codes of host functions and guest exports (ABI.md section 8). */
export const STATUS_OK: i32 = 0;
export const STATUS_NOT_FOUND: i32 = -1;
export const STATUS_ERROR: i32 = -2;
export const STATUS_BAD_CONFIG: i32 = -3;
export const STATUS_UNDECLARED: i32 = -4;

/** Results of sluice_apply (ABI.md section 10.2). */
export const APPLY_WRITE: i32 = 0;
export const APPLY_KEEP: i32 = 1;
export const APPLY_DELETE: i32 = 2;
export const APPLY_ABORT: i32 = 3;

/** OpFlagNonDet: a non-deterministic operation (ABI.md section 10.5). */
export const OP_FLAG_NONDET: u32 = 1;
/** Bit 1 of an apply request's flags: the own key was found. */
export const APPLY_FLAG_OWN_FOUND: u32 = 2;

/** The size of an encoded batch's record count. */
export const BATCH_HEADER_SIZE: i32 = 4;
/**
 * The fixed fields of a record after its size prefix: origin, flags, time,
 * key length, value length, header count.
 */
export const RECORD_FIXED_SIZE: i32 = 28;
/** The size of the result slot at the start of an apply request. */
export const APPLY_RESULT_SIZE: i32 = 8;
/** The encoded size of a record is at most this (16 MiB). */
export const MAX_RECORD_SIZE: i32 = 16 << 20;

/** Table handle of an operator's first declared table. */
export const DEFAULT_TABLE: u32 = 0;
