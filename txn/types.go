package txn

import (
	"errors"
	"fmt"
	"hash/maphash"
)

// Key names one state entry: a table and a key within it.
type Key struct {
	Table uint32
	Key   string
}

// String formats the key as table/"key" for error messages and logs.
func (k Key) String() string { return fmt.Sprintf("%d/%q", k.Table, k.Key) }

// Op is one state-access operation, declared at plan time.
//
// A deterministic operation (NonDet false) writes exactly one key, Write, with
// the Effect its function returns, and may read the keys in Reads (parametric
// dependencies). A non-deterministic operation (NonDet true) has no key of its
// own: it reads and writes keys of table Table through Access.Get, Put and
// Delete, chosen at run time; it may also declare Reads, in any table. Write is
// ignored for it.
type Op struct {
	// Write is the key a deterministic operation writes (its own key).
	Write Key
	// Reads are the keys the operation reads besides its own key.
	Reads []Key
	// Fn names the function that computes the effect; txn passes it through.
	Fn uint32
	// NonDet marks an operation whose accesses are not known at plan time.
	NonDet bool
	// Table is the scope of a non-deterministic operation.
	Table uint32
	// Arg is opaque data for the function (the event's parameters); txn
	// passes it through without reading it.
	Arg []byte
	// Window, when not zero, makes the operation a windowed read of W =
	// Window transactions: besides the value of each of its Reads as of its
	// timestamp, it sees every version of each read key written by the
	// transactions in [t-W, t), t its own transaction (WindowReader.Window).
	// The window is bounded on both sides: neither its own transaction's
	// writes nor later ones are in it, nor writes older than W transactions.
	// Versions of earlier batches come from a WindowStore (a History); with
	// another Store, the batch is the first: nothing was written before it.
	Window uint32
}

// Txn is one transaction (event): its operations in timestamp order. Its
// index in the batch is its timestamp.
type Txn struct {
	Ops []Op
}

// Access is an operation's view of state as of its timestamp: the latest
// version written by an earlier operation of the batch (earlier transactions
// that are not aborted, and earlier operations of its own transaction), or the
// committed value. Each call of Apply gets its own Access, valid only during
// that call.
type Access interface {
	// Worker returns the index of the worker making the call, in
	// [0, Workers): a caller that keeps per-worker resources (one Wasm
	// instance per worker) picks them with it.
	Worker() int
	// Own returns the operation's own key's value before the operation.
	// A non-deterministic operation has no own key: (nil, false).
	Own() ([]byte, bool)
	// Read returns the value of Reads[i]. An index out of range fails the
	// operation with ErrUndeclared and returns (nil, false).
	Read(i int) ([]byte, bool)
	// Get returns the value of k. A deterministic operation may Get only its
	// own key and its declared reads; a non-deterministic one its declared
	// reads and any key of its table. Anything else fails the operation with
	// ErrUndeclared. A non-deterministic operation sees its own Puts.
	Get(k Key) ([]byte, bool, error)
	// Put writes k. Only a non-deterministic operation may Put, and only keys
	// of its table; a deterministic operation writes through its Effect.
	Put(k Key, v []byte) error
	// Delete deletes k, under the same rules as Put.
	Delete(k Key) error
}

// WindowReader is implemented by the Access of every strategy: a windowed
// read (Op.Window > 0) gets its windows through it.
type WindowReader interface {
	// Window returns the versions of Reads[i] written by the transactions
	// in [t-Op.Window, t), t the operation's transaction, oldest first: one
	// per transaction that wrote the key and was not aborted (its last
	// write of the key; Found false for a deletion). An operation without a
	// window, or an index out of range, fails with ErrUndeclared and gets
	// nil. The slice and the values it holds must not be modified.
	Window(i int) []Version
}

// Version is one version of a key in a windowed read: the value a
// transaction wrote (Found false: it deleted the key) and how many
// transactions before the reader's it is (1: the previous transaction).
type Version struct {
	Back  uint64
	Value Value
}

// Write is the version one committed transaction wrote to one key (its last
// write of the key), with the transaction's index in the batch.
type Write struct {
	Txn   int
	Key   Key
	Value Value
}

// WindowStore is a Store that also keeps the versions committed by earlier
// batches, for windowed reads that reach back before the batch. Its methods
// may be called concurrently during Run and must not change their answers.
type WindowStore interface {
	Store
	// Versions returns the versions of k committed by the last n
	// transactions before the batch, oldest first, each with Back counted
	// from the batch's first transaction (1: the transaction just before
	// it). An error fails the operation that asked, as a Store error does.
	Versions(k Key, n uint64) ([]Version, error)
}

// Effect is what a function decides for its operation.
//
// For a deterministic operation: write Value to its key (the zero Effect
// writes an empty value), or delete the key (Delete), or leave it unchanged
// without writing a version (Keep). For a non-deterministic operation only
// Abort counts; its writes are its Puts and Deletes. Abort aborts the whole
// transaction: every version it wrote is removed.
type Effect struct {
	Value  []byte
	Delete bool
	Keep   bool
	Abort  bool
}

// Apply computes the effect of operation op of transaction txn (o is
// &batch[txn].Ops[op]).
//
// Apply is called concurrently from several workers, each with its own Access,
// and may be called more than once for one operation (re-execution after an
// abort, or a speculative execution that is discarded), so it must be safe for
// concurrent use and deterministic: its result may depend only on its
// arguments and on the values read through a. It must not modify the byte
// slices it reads or returns after returning them: txn keeps them as versions
// and hands them to other operations and to the caller without copying.
//
// A non-nil error is not an abort: it fails the batch (Run returns it, wrapped
// in an *OpError) if the serial executor would have reached that operation.
type Apply func(txn, op int, o *Op, a Access) (Effect, error)

// Store is the committed state before the batch. It is read-only during Run
// and its Get may be called concurrently; the returned slice must not change.
type Store interface {
	// Get returns the committed value of k and whether k exists. An error
	// (an I/O error, a key the caller may not read) is never taken for an
	// absent key: it fails the batch, and Run returns an error wrapping it.
	Get(k Key) ([]byte, bool, error)
}

// BatchStore is a Store that loads many keys in one call, with the hashes
// the scheduler computed: the plan hashes every key it interns once, with
// KeyHash and the store's Seed, and loads the keys new to a batch through
// GetBatch rather than one Get each, so that the store need not hash them
// again and may overlap the lookups' cache misses. Package txn/memstore
// implements it.
type BatchStore interface {
	Store
	// Seed returns the seed whose KeyHash the store indexes keys by.
	Seed() maphash.Seed
	// GetBatch loads keys[i], whose KeyHash with Seed is hashes[i], into
	// out[i], for every i (the three have the same length), as Get would.
	// An error is Get's error for keys[failed]: it fails the batch, and
	// Run returns a *StoreError for that key.
	GetBatch(keys []Key, hashes []uint64, out []Value) (failed int, err error)
}

// MapStore is a Store over a Go map, for tests and tools. It costs a few
// cache misses per lookup once it outgrows the caches, and the garbage
// collector scans its pointers: package txn/memstore is the store whose
// cost per key does not grow with the number of keys.
type MapStore map[Key][]byte

// Get returns the value of k; it never fails.
func (m MapStore) Get(k Key) ([]byte, bool, error) {
	v, ok := m[k]
	return v, ok, nil
}

// Value is a value read, with whether the key existed.
type Value struct {
	Bytes []byte
	Found bool
}

// Equal reports whether two values read are the same (both absent, or both
// present with equal bytes).
func (v Value) Equal(w Value) bool {
	return v.Found == w.Found && string(v.Bytes) == string(w.Bytes)
}

// KeyValue is one value a non-deterministic operation read through Get.
type KeyValue struct {
	Key   Key
	Value Value
}

// Observed is what one operation read, for the guest's post step.
type Observed struct {
	// Executed is false for operations the serial executor never runs:
	// those after the operation that aborted their transaction.
	Executed bool
	// Own is the own key's value before the operation (deterministic only).
	Own Value
	// Reads are the values of Op.Reads, in order.
	Reads []Value
	// Gets are the values a non-deterministic operation read through Get
	// from state, in call order: keys that are not among its Reads (their
	// values are in Reads) and that it had not Put or Deleted itself.
	Gets []KeyValue
	// Windows are the windows of Op.Reads, in order, for a windowed read
	// (Op.Window > 0); nil otherwise.
	Windows [][]Version
}

// Change is one entry of the change set: the final value of a key written by
// a committed transaction, or its deletion.
type Change struct {
	Key    Key
	Value  []byte
	Delete bool
}

// Result is the outcome of one batch. It equals the serial executor's.
type Result struct {
	// Committed[i] tells whether transaction i committed.
	Committed []bool
	// Changes is the change set to commit: declared keys in the order they
	// first appear in the batch (each operation's Write, then its Reads, in
	// timestamp order), then keys only non-deterministic operations
	// declared nothing about, sorted by table then key. The order is
	// deterministic and the same for every strategy; sorting it all would
	// cost more than the batch's execution.
	Changes []Change
	// Stats tells where the time went and what the batch looked like.
	Stats Stats
	// Versions lists, when the Store is a WindowStore, every version the
	// committed transactions wrote, for History.Commit: by transaction in
	// timestamp order, then by key in the order of the transaction's first
	// write to it, each with the transaction's last value. Nil otherwise.
	Versions []Write

	obs   []Observed
	first []int32 // first[i] is the index in obs of transaction i's op 0
}

// Observed returns what operation op of transaction txn read. The slices it
// holds alias versions and committed values: do not modify them.
func (r *Result) Observed(txn, op int) *Observed {
	return &r.obs[int(r.first[txn])+op]
}

// Errors of the package, checked with errors.Is.
var (
	// ErrUndeclared: an operation accessed state outside its declaration.
	ErrUndeclared = errors.New("txn: access outside the operation's declaration")
	// ErrInvalidBatch: the batch is malformed.
	ErrInvalidBatch = errors.New("txn: invalid batch")
	// ErrUnknownStrategy: a strategy name is not known.
	ErrUnknownStrategy = errors.New("txn: unknown strategy")
	// ErrClosed: the Scheduler was closed.
	ErrClosed = errors.New("txn: scheduler closed")
	// ErrAdaptive: Run was given the adaptive strategy, which a decision
	// model must resolve to a TPG strategy first.
	ErrAdaptive = errors.New("txn: the adaptive strategy is resolved per batch by a decision model (package txn/adapt); Run needs the strategy it chose")
	// ErrWindow: a windowed read reaches further back than the History
	// keeps.
	ErrWindow = errors.New("txn: window larger than the history keeps")
	// ErrNoConvergence: abort handling did not reach a fixed point (a bug).
	ErrNoConvergence = errors.New("txn: abort handling did not converge")
)

// OpError is the error of one operation: its Apply error, an access
// outside its declaration (wrapping ErrUndeclared), or a Store error on a
// key it read (wrapping a *StoreError).
type OpError struct {
	Txn, Op int
	Err     error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("txn: transaction %d operation %d: %v", e.Txn, e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// StoreError is a Store's error reading one key. Run returns it (wrapped in
// an *OpError when an operation's read hit it) instead of a result.
type StoreError struct {
	Key Key
	Err error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("txn: reading %v from the store: %v", e.Key, e.Err)
}

// Unwrap returns the Store's error.
func (e *StoreError) Unwrap() error { return e.Err }
