package main

import (
	"encoding/binary"
	"errors"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.JoinFunc(join) }

// errBad rejects a pair with a value "bad".
var errBad = errors.New("bad value in pair")

// join emits the pair's values joined by '|'.
func join(key []byte, w *sluice.Window, left, right *sluice.Record, out *sluice.Emitter) error {
	l, r := []byte("-"), []byte("-")
	if left != nil {
		l = left.Value
	}
	if right != nil {
		r = right.Value
	}
	if string(l) == "bad" || string(r) == "bad" {
		return errBad
	}
	if left != nil && string(l) == "none" {
		return nil
	}
	v := make([]byte, 0, len(l)+1+len(r))
	v = append(append(append(v, l...), '|'), r...)
	res := sluice.Record{Key: key, Value: v}
	if w != nil {
		b := binary.LittleEndian.AppendUint64(nil, uint64(w.Start))
		res.Headers = []sluice.Header{{Name: []byte("window"), Value: binary.LittleEndian.AppendUint64(b, uint64(w.End))}}
	}
	out.Emit(res)
	if left != nil && string(l) == "twice" {
		out.Emit(res)
	}
	return nil
}
