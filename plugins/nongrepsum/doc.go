// Command nongrepsum is MorphStream's NonGrepSum benchmark, of
// non-deterministic state access, as a Sluice transactional operator:
// GrepSum's transactions, some of whose operations write a key that is the
// value of another key, known only when the operation runs. The logic is
// package nongrepsumop (see its documentation for the operations and the
// output records), which the tests and benchmarks also run natively.
//
// Its pipeline operator declares one table, "micro", and reads the events
// of txn/apps/nongrepsum/event, as the generator source's txn mode with
// app ngs writes them:
//
//	operators:
//	  - name: nongrepsum
//	    plugin: nongrepsum.wasm
//	    kind: transactional
//	    tables:
//	      - {name: micro, init: {generator: {app: ngs, keys: 122880}}}
//	    punctuation: {events: 10240}
//	    strategy: ns-op-lazy
//
// Build: sluice plugin build plugins/nongrepsum
package main
