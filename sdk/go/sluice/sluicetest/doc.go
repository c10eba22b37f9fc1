// Package sluicetest runs a Sluice plugin's handler in ordinary Go tests,
// against an in-memory stand-in for the host.
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
// shortcut.
//
// LoadWasm loads the plugin's compiled module instead, and WasmModule.New
// gives a Harness with the same methods, so the same test can check the
// module the host will run: wazero with its defaults (no files, a fake
// clock, deterministic randomness), the guest's stderr captured for trap
// messages.
//
// What the harness checks and mirrors of the host: every pointer and length
// a WebAssembly guest passes is bounds-checked; emitted origins and rejected
// records must be in the batch; state calls trap when no table is declared
// (a stateless operator); a trap or a failed batch discards the batch's
// outputs and undoes its state changes; after a trap the instance is
// replaced by a fresh, reconfigured one while state, which the host owns,
// is kept. Unlike the host, it reports a failed batch to the test rather
// than re-running its records one at a time.
//
// Design decisions: every native harness runs the one handler the test
// binary registered, and a handler typically keeps its configuration in a
// package variable. So calls from all harnesses are serialised on one
// process-wide lock, and a harness re-applies its configuration before
// processing when another harness configured the handler since: two
// harnesses with different configurations behave as two instances would.
package sluicetest
