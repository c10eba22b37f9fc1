// Package plugin is the host side of the Sluice ABI: it loads a guest
// operator's WebAssembly module, checks it against the ABI before it sees any
// record, provides the "sluice" host functions, and runs batches of records
// through the guest with failure isolation.
//
// What it owns:
//
//   - Load and Check: the contract a module must meet (exports, memory,
//     imports and their signatures, a reactor rather than a WASI command,
//     the declared ABI version). Load refuses a bad module with a *LoadError
//     listing every problem, so a plugin author fixes them in one round;
//     Check reports the same findings without failing, for
//     `sluice plugin check`.
//   - The declaration of a module's operator kinds (ABI.md, section 12):
//     Load refuses a module whose sluice.kinds custom section does not name
//     the kind it is asked to serve, and Check reports the kinds declared,
//     or inferred from the exports of a module without the section.
//     DeclareKinds writes the section for `sluice plugin build`, from what
//     the module's sluice_kinds export reports.
//   - HostModule: emit, reject, table_id, state_get, state_put, state_delete
//     and log. Every pointer and length a guest passes is checked against its
//     memory, including ptr+len overflow, and misuse of the ABI fails the
//     guest call with a *runtime.HostError naming the function and the fault;
//     a guest can trap but never crash the host.
//   - Instance.Process: one guest call per batch, and the recovery when it
//     fails.
//   - The transactional kind (ABI.md, section 10): Instance.Plan, ApplyOp and
//     Post call sluice_plan, sluice_apply and sluice_post, and the host
//     functions txn_plan, txn_get, txn_put and txn_delete route the guest's
//     declarations and tracked accesses to the batch's plan and to the
//     txn.Access of the operation being applied. host/txnop builds the
//     operator on them. Apply is the hot path (one call per operation
//     execution): the request is written into a guest region reserved once
//     per instance, and a written value is copied out into a per-instance
//     slab, since the scheduler keeps values as versions. A failed
//     transactional call fails the batch (a *TxnError naming plugin,
//     export, event and operation): records are not isolated one by one,
//     because the events of a batch are one unit of scheduling.
//
// Design decisions:
//
// Host functions are registered once per engine and serve every plugin
// compiled by it. They find the call in progress (plugin, State, Output)
// through the ctx of the guest call: each Instance stores its one reusable
// *call under an unexported key with a single context.WithValue per guest
// call, so a host call allocates nothing to find it, and no package-level
// state is needed.
//
// Batches, not records, cross the boundary: the input batch is encoded once,
// straight into the memory the guest's sluice_alloc provides; each emitted
// output batch is copied out of guest memory whole, in one copy, into an
// arena owned by Output and reused across batches, and its records point
// into that copy. After warm-up a batch allocates nothing, whatever its size.
//
// Failure isolation: when a batch call fails (trap, timeout, host function
// error, exit, error status), state is rolled back to a savepoint taken
// before the batch, its outputs are dropped, and its records are re-run one
// at a time, each under its own savepoint, so one poisonous record becomes a
// Reject and the others go through. Re-running is safe because stateless
// operators are pure and a keyed operator's state changes are rolled back
// before the retry. A guest instance whose call failed inside the engine is
// closed and replaced by a fresh one configured the same way (the engine
// refuses further calls on it: it may have stopped half-way through updating
// its own memory); a guest that returned an error status returned normally
// and keeps its instance. Process returns an error only when the operator
// cannot go on: its context is done, or a fresh instance cannot be made.
//
// Log messages from guests go to log/slog with the plugin's name and kind;
// each message is cut at 1 KiB and a guest call may write at most 64, the
// rest being counted in one warning, so a chatty or hostile guest cannot
// flood the host's log.
package plugin
