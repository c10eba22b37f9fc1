// Command ledger is MorphStream's Streaming Ledger benchmark as a Sluice
// transactional operator: deposits credit an account and a book entry;
// transfers move an amount from an account and a book entry to others when
// the source account's balance and the source book entry's both cover it,
// and abort otherwise. The logic
// is package ledgerop (see its documentation for the operations and the
// output records), which the tests and benchmarks also run natively.
//
// Its pipeline operator declares the tables "accounts" and "book_entries"
// (any order; the workload generator initialises them) and reads the
// events of txn/apps/ledger/event, as the generator source's txn mode with
// app sl writes them:
//
//	operators:
//	  - name: ledger
//	    plugin: ledger.wasm
//	    kind: transactional
//	    tables:
//	      - {name: accounts, init: {generator: {app: sl, keys: 115200}}}
//	      - {name: book_entries, init: {generator: {app: sl, keys: 115200}}}
//	    punctuation: {events: 10240}
//	    strategy: ns-op-lazy
//
// Build: sluice plugin build plugins/ledger
package main
