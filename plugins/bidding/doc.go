// Command bidding is MorphStream's Online Bidding benchmark as a Sluice
// transactional operator: a buy takes one unit of each of its items when
// every item's ask price is within the bid and in stock, and aborts
// otherwise; an alert sets its items' prices; a top-up adds to their
// quantities. The logic is package biddingop (see its documentation for
// the operations and the output records), which the tests and benchmarks
// also run natively.
//
// Its pipeline operator declares one table, "goods", and reads the events
// of txn/apps/bidding/event, as the generator source's txn mode with app
// ob writes them:
//
//	operators:
//	  - name: bidding
//	    plugin: bidding.wasm
//	    kind: transactional
//	    tables:
//	      - {name: goods, init: {generator: {app: ob, keys: 100000}}}
//	    punctuation: {events: 10240}
//	    strategy: ns-op-lazy
//
// Build: sluice plugin build plugins/bidding
package main
