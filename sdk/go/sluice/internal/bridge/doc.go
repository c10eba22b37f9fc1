// Package bridge connects package sluice to its native test harness,
// sluicetest, without widening sluice's public API.
//
// In a WebAssembly build the SDK talks to the real host through
// //go:wasmimport functions. In a native build there is no host, so
// sluicetest supplies a fake one (a Host) and drives the SDK's guest core
// (a Guest) exactly as the wasm exports would: the same allocator, the same
// batch decoding, the same output encoding. Package sluice sets NewGuest
// during its initialisation in native builds; sluicetest imports sluice, so
// the hook is always set before sluicetest can use it.
//
// Likewise NewTxnDriver runs a transactional operator's handlers (a
// sluice.Txn) natively for sluicetest.NewTxnDriver, without the ABI: Plan's
// declarations, each operation's function over a TxnAccess, Post's outputs.
//
// The hooks are package variables rather than an exported sluice function so
// that plugin authors see only the operator API in sluice's documentation.
// They are written once, during package initialisation, and only read
// after.
package bridge
