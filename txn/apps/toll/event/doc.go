// Package event is the wire format of Toll Processing (MorphStream's "TP"
// benchmark, after Linear Road): its position reports, its state values and
// its keys. The workload generator (txn/apps/workload) writes these events;
// the Toll Processing operator, native or compiled to Wasm, reads them. The
// package is kept light for the Wasm guest: it imports no part of the host
// and nothing that reflects, and decoding allocates nothing.
//
// # State
//
// Two tables keyed by road segment, one entry per segment in [0, keys): the
// key is the KeyWidth-digit decimal of the segment (AppendKey).
//
//   - Speeds ("segment_speed"): a SpeedStats, the sum and the number of the
//     valid speeds reported on the segment, two uint64 in 16 bytes little
//     endian. The average speed is Sum/Count. MorphStream keeps a running
//     (previous+new)/2 in a double instead; a sum and a count give the true
//     average and stay exact.
//   - Counts ("segment_count"): a VehicleSet, the set of vehicles seen on the
//     segment as a bitmap of Vehicles bits in 16 bytes little endian; the
//     distinct-vehicle count is its population count. The representation
//     is bounded (16 bytes per segment whatever the traffic) and exact,
//     because vehicle ids are drawn from a population of Vehicles, as
//     MorphStream draws them from 100; MorphStream keeps a HashSet.
//
// Both start zeroed; an empty value decodes as the zero state too.
//
// # Events
//
// A position report (Segment, Vehicle, Speed) is a transaction of two
// operations on its segment: add Speed to the segment's SpeedStats, and add
// Vehicle to its VehicleSet. Both are conditioned on the report being valid
// (Valid: Speed at most MaxSpeed): an invalid report aborts. The generator
// draws valid speeds in [MinSpeed, MaxSpeed] and realises its abort ratio
// with reports of speed InvalidSpeed, as MorphStream's generator does.
//
// Encoding (v1), after the tag byte 'T': unsigned varints segment, vehicle,
// speed, busy-ns.
package event
