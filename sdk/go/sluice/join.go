package sluice

// JoinFunc registers fn as a join's handler (kind: join in the pipeline
// file). The host's join keeps both inputs' records and finds the pairs
// with equal keys in a window or an interval; fn builds each pair's
// results and emits them through out: any number, zero included. left is
// the record of the join's first input, right that of its second; one of
// them is nil for an outer join's record that matched nothing. w is the
// pair's window, nil for an interval join. The host sets each result's
// Time: w.End-1 for a window join, the later of the two records' times
// for an interval join.
//
// An error dead-letters the pair (the result the join makes without a
// plugin, a JSON object of the key and both values, with the error's text)
// and discards what fn emitted for it. key, w, left, right and their bytes
// are valid only during the call. fn must be a deterministic function of
// its arguments: the host calls it again with the same pair after a
// failure or a recovery.
func JoinFunc(fn func(key []byte, w *Window, left, right *Record, out *Emitter) error) {
	registered.set(kindJoin, "JoinFunc", fn == nil)
	registered.joinFn = fn
}
