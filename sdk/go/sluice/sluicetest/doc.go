// Package sluicetest runs a Sluice plugin's operator in ordinary Go tests,
// with the host's semantics, against in-memory state.
//
//	func TestCount(t *testing.T) {
//		h := sluicetest.New().Declare("counts")
//		out, rejects, err := h.Process(sluicetest.KV("the", "the"), sluicetest.KV("the", "the"))
//		// out[1].Value == "2", rejects empty, err nil
//		v, _ := h.State("counts", "the") // "2"
//	}
//
// New drives the handler the test binary registered (the plugin package's
// init functions register it when its tests run) through the SDK's own guest
// core: the batch is encoded as the host encodes it, copied into a region
// from the SDK's allocator, decoded and processed by the same code the
// WebAssembly exports call, and the outputs are decoded from the SDK's
// encoding. So a native test exercises the SDK's encoding too, not a
// shortcut. Its host functions are an in-memory fake that checks what the
// real host checks.
//
// This package needs only the SDK: a plugin's module graph stays that of
// a guest. The compiled module is tested in the real host by `sluice
// plugin test`, on case files; inside the Sluice module, package
// host/plugin/hosttest loads a module into the host (host/plugin on
// wazero) and gives a harness with the same methods and result types, and
// runs a transactional operator on the host's scheduler (host/txnop),
// natively through this package's TxnDriver or compiled.
//
// The harness follows the host's rules by mirroring
// plugin.Instance.Process step by step: a record the operator rejects
// leaves no trace (its outputs are dropped, a keyed operator's state writes
// undone); a batch whose call fails (a trap, an error status) is undone
// and its records run again one call each, so that only the failing ones
// become Rejects, whose Err says why; after a trap the instance is
// replaced by a fresh, reconfigured one while state, which the host owns,
// is kept. A harness is keyed when it has declared tables and stateless
// otherwise.
//
// Transactional operators (sluice.Transactional) are scheduled by the host;
// NewTxnDriver gives the SDK's half of a native run (Plan, each
// operation's function, Post) for a scheduler to drive, as
// host/plugin/hosttest's TxnLogic does on the host's own scheduler.
//
// Design decisions:
//
// This package imports nothing of the host, so that it lives in the SDK's
// module (github.com/sluicehq/sluice/sdk/go), which depends on the abi
// module alone: a plugin's tests do not pull in the host's dependencies
// (Pebble, nats-server, wasmtime-go, Prometheus). The harness therefore
// cannot use plugin.Instance (and there is no module to instantiate), so
// it repeats the host's recovery algorithm in a few lines; the example
// plugins' tests run every case here and in the host (hosttest) and
// require identical results, which keeps the two in step.
//
// Every native harness runs the one handler the test binary registered,
// and a handler typically keeps its configuration in a package variable.
// So native guest calls from all harnesses are serialised on one
// process-wide lock, and a harness re-applies its configuration before
// processing when another harness configured the handler since: two
// harnesses with different configurations behave as two instances would.
//
// NewTxnDriver's driver reaches the SDK's handlers through the internal
// bridge package, as the native Harness does, so that its only cost per
// operation over a hand-written function is the dispatch.
package sluicetest
