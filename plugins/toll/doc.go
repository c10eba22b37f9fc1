// Command toll is MorphStream's Toll Processing benchmark (after Linear
// Road) as a Sluice transactional operator: each position report adds its
// speed to its road segment's statistics and its vehicle to the segment's
// set of vehicles seen, and outputs the segment's average speed and
// distinct-vehicle count; an invalid report aborts. The logic is package
// tollop (see its documentation for the operations and the output
// records), which the tests and benchmarks also run natively.
//
// Its pipeline operator declares the tables "segment_speed" and
// "segment_count", in that order, and reads the events of
// txn/apps/toll/event, as the generator source's txn mode with app tp
// writes them:
//
//	operators:
//	  - name: toll
//	    plugin: toll.wasm
//	    kind: transactional
//	    tables:
//	      - {name: segment_speed, init: {generator: {app: tp, keys: 495120}}}
//	      - {name: segment_count, init: {generator: {app: tp, keys: 495120}}}
//	    punctuation: {events: 10240}
//	    strategy: ns-op-lazy
//
// Build: sluice plugin build plugins/toll
package main
