package bridge

// Host is the set of host functions of ABI version 1, as the guest core
// calls them. Slices passed in are guest memory: an implementation must not
// keep them after it returns. An implementation signals misuse (a trap in
// the real host) by panicking.
type Host interface {
	// Emit receives an encoded batch of output records.
	Emit(batch []byte)
	// Reject dead-letters input record origin of the current batch.
	Reject(origin uint32, msg string)
	// TableID resolves a declared state table, or returns abi.StatusNotFound.
	TableID(name string) int32
	// StateGet copies the value of key into buf when it fits and returns
	// its length, or returns abi.StatusNotFound.
	StateGet(table int32, key, buf []byte) int32
	// StatePut sets the value of key.
	StatePut(table int32, key, value []byte)
	// StateDelete removes key.
	StateDelete(table int32, key []byte)
	// Log writes msg at one of the abi.Log* levels.
	Log(level int32, msg string)
}

// Guest is the SDK's guest core: what the wasm exports sluice_alloc,
// sluice_configure and sluice_process call.
type Guest interface {
	// Alloc returns size writable bytes for the next Configure or Process,
	// or nil when size is out of range.
	Alloc(size int32) []byte
	// Configure passes the operator's configuration (JSON) and returns an
	// abi status.
	Configure(config []byte) int32
	// Process runs the registered handler over one encoded batch and
	// returns an abi status.
	Process(batch []byte) int32
	// AggAdd, AggMerge, AggFire and WindowFire are the window exports
	// (sluice_agg_add, sluice_agg_merge, sluice_agg_fire,
	// sluice_window_fire) over their encoded input; each returns an abi
	// status.
	AggAdd(groups []byte) int32
	AggMerge(pairs []byte) int32
	AggFire(fires []byte) int32
	WindowFire(groups []byte) int32
	// Join is sluice_join over its encoded input (ABI.md section 14);
	// it returns an abi status.
	Join(pairs []byte) int32
}

// NewGuest makes a guest core bound to h that runs the handler registered
// with package sluice. It is set by package sluice in native builds and is
// nil in WebAssembly builds.
var NewGuest func(h Host) Guest
