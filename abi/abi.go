package abi

// Version is the ABI version this package describes. A module declares the
// version it was built for by exporting ExportABIVersion; the host refuses a
// module whose version differs.
const Version = 1

// HostModule is the import module name of every Sluice host function.
const HostModule = "sluice"

// Names of the functions the host provides in HostModule. The signatures are
// given in ABI.md; i32 is a 32-bit integer, pointers and lengths are
// unsigned offsets into the guest's exported memory.
const (
	// FuncEmit: emit(ptr i32, len i32). Hands the host an encoded batch of
	// output records. May be called any number of times during one call of
	// ExportProcess; the records of all calls are appended in order.
	FuncEmit = "emit"
	// FuncReject: reject(origin i32, msg_ptr i32, msg_len i32). Marks input
	// record number origin of the current batch as failed with a message; the
	// host sends it to the dead letters and keeps going.
	FuncReject = "reject"
	// FuncTableID: table_id(name_ptr i32, name_len i32) -> i32. Resolves a
	// state table declared for the operator to its handle, or StatusNotFound.
	FuncTableID = "table_id"
	// FuncStateGet: state_get(table i32, key_ptr i32, key_len i32,
	// buf_ptr i32, buf_cap i32) -> i32. Copies the value of key into buf when
	// it fits and returns its length; returns StatusNotFound when the key has
	// no value. A returned length larger than buf_cap means nothing was
	// copied: call again with a buffer of at least that size.
	FuncStateGet = "state_get"
	// FuncStatePut: state_put(table i32, key_ptr i32, key_len i32,
	// val_ptr i32, val_len i32). Sets the value of key.
	FuncStatePut = "state_put"
	// FuncStateDelete: state_delete(table i32, key_ptr i32, key_len i32).
	// Removes key.
	FuncStateDelete = "state_delete"
	// FuncLog: log(level i32, ptr i32, len i32). Writes a message to the
	// host's log at one of the Log* levels.
	FuncLog = "log"
)

// Names of the functions and memory a guest module exports.
const (
	// ExportMemory is the guest's linear memory.
	ExportMemory = "memory"
	// ExportABIVersion: sluice_abi_version() -> i32. Returns the ABI version
	// the module was built for. Required.
	ExportABIVersion = "sluice_abi_version"
	// ExportAlloc: sluice_alloc(size i32) -> i32. Returns the offset of size
	// writable bytes, or 0 when it cannot. Required. The region stays valid
	// until the next guest call that consumes it returns.
	ExportAlloc = "sluice_alloc"
	// ExportConfigure: sluice_configure(ptr i32, len i32) -> i32. Optional.
	// Called once per instance, before any record, with the operator's
	// configuration from the pipeline file encoded as JSON. Returns a status.
	ExportConfigure = "sluice_configure"
	// ExportProcess: sluice_process(ptr i32, len i32) -> i32. Processes one
	// encoded batch of input records (map, filter, flatmap and keyed
	// operators). Returns StatusOK, or an error status that fails the whole
	// batch.
	ExportProcess = "sluice_process"
	// ExportInitialize is the WASI reactor initialiser. When a module exports
	// it, the host calls it once after instantiation, before anything else.
	ExportInitialize = "_initialize"
)

// The declaration of the operator kinds a module serves (ABI.md section
// 12). Both are optional: the host infers the kinds of a module without the
// section from its exports.
const (
	// SectionKinds is the custom section in which a module declares the
	// operator kinds its handler serves: their names ("map", "filter",
	// "flatmap", "keyed", "transactional", "aggregate", "window"), separated by commas, as text,
	// for instance "map" or "map,filter,flatmap". The host refuses, at
	// load, to run a module that has it as an operator of another kind.
	SectionKinds = "sluice.kinds"
	// ExportKinds: sluice_kinds() -> i32. Returns the operator kinds the
	// module's registered handler serves, as a set of KindBit* bits, or 0
	// when it has no usable handler, after logging why at LogError. For
	// the SDKs whose plugins register their handler when the module starts
	// (_initialize): a build tool calls it, on an instance of its own, and
	// writes SectionKinds from its result. The host does not call it when
	// it loads a module.
	ExportKinds = "sluice_kinds"
)

// The features a guest declares beyond version 1 as first published (ABI.md
// section 9): what it understands of the host, negotiated before the host
// uses it.
const (
	// ExportFeatures: sluice_features() -> i32. Optional. Returns the set
	// of Feature* bits the guest understands. The host calls it once, when
	// it loads the module, and uses only the features whose bits are set
	// (unknown bits are ignored); a module without it gets none of them,
	// exactly as before they existed.
	ExportFeatures = "sluice_features"
)

// The bits of ExportFeatures' result.
const (
	// FeatureInputs: the guest reads the input each record arrived on
	// (Record.Input), which the host then puts in the FlagsInput bits of
	// every input record's flags.
	FeatureInputs int32 = 1 << 0
)

// The bits of ExportKinds' result, one per operator kind.
const (
	KindBitMap           int32 = 1 << 0
	KindBitFilter        int32 = 1 << 1
	KindBitFlatMap       int32 = 1 << 2
	KindBitKeyed         int32 = 1 << 3
	KindBitTransactional int32 = 1 << 4
	KindBitAggregate     int32 = 1 << 5
	KindBitWindow        int32 = 1 << 6
	KindBitJoin          int32 = 1 << 7
)

// Status codes returned by host functions and guest exports, as i32.
const (
	StatusOK       int32 = 0
	StatusNotFound int32 = -1
	// StatusError is returned by a guest export that failed; the host reads
	// the reason from the last FuncLog message at LogError, if any.
	StatusError int32 = -2
	// StatusBadConfig is returned by ExportConfigure when the operator's
	// configuration is invalid.
	StatusBadConfig int32 = -3
)

// Log levels for FuncLog.
const (
	LogDebug int32 = 0
	LogInfo  int32 = 1
	LogWarn  int32 = 2
	LogError int32 = 3
)

// DefaultTable is the handle of an operator's default state table: the first
// table the pipeline declares for it. Other tables are resolved with
// FuncTableID.
const DefaultTable int32 = 0

// Names reserved for a later version of the ABI (ABI.md section 11): a
// version-1 module must neither export nor import them, and the host refuses
// one that does.
const (
	// ReservedExportOnTimer will receive event-time timers.
	ReservedExportOnTimer = "sluice_on_timer"
	// ReservedFuncWindowGet will read windowed, multi-versioned state.
	ReservedFuncWindowGet = "window_get"
	// ReservedFuncTimerSet will register a timer.
	ReservedFuncTimerSet = "timer_set"
	// ReservedFuncTimerDelete will remove a timer.
	ReservedFuncTimerDelete = "timer_delete"
)

// Reserved reports whether name is reserved for a later version of the
// ABI, as an export of a guest module or a function of HostModule.
func Reserved(name string) bool {
	switch name {
	case ReservedExportOnTimer, ReservedFuncWindowGet, ReservedFuncTimerSet, ReservedFuncTimerDelete:
		return true
	}
	return false
}
