// Command grepsum is MorphStream's GrepSum benchmark as a Sluice
// transactional operator: each event is a transaction of txn-length
// operations, each writing a key with its value plus the values of the
// keys it reads plus one; an event flagged to abort aborts. The logic is
// package grepsumop (see its documentation for the operations and the
// output records), which the tests and benchmarks also run natively.
//
// Its pipeline operator declares one table, "micro", and reads the events
// of txn/apps/grepsum/event, as the generator source's txn mode with app
// gs writes them:
//
//	operators:
//	  - name: grepsum
//	    plugin: grepsum.wasm
//	    kind: transactional
//	    tables:
//	      - {name: micro, init: {generator: {app: gs, keys: 12288}}}
//	    punctuation: {events: 10240}
//	    strategy: ns-op-lazy
//
// Build: sluice plugin build plugins/grepsum
package main
