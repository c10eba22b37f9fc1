// Package windowop is a transactional operator with windowed reads, for
// the SDK's tests: it runs natively (hosttest.TxnLogic) and in WebAssembly
// (testdata/windowguest) from the same source.
//
// An event's value is three bytes: a key a, a key b and a flag. The event
// adds one to key "k<a>" of table 0; with the flag set, it then declares a
// windowed read of Window events over keys "k<a>" and "k<b>" that writes
// key "w<b>" with the encoding of both windows: per window its version
// count, then per version its Back, found flag, length and bytes (all u32
// little endian but the bytes). The state then shows every window read.
package windowop

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// Window is the window of the operator's windowed reads, in events.
const Window = 6

// Op returns the operator.
func Op() sluice.Txn {
	return sluice.Txn{Plan: plan, Funcs: []sluice.TxnFunc{add, window}}
}

func plan(ev sluice.Record, p *sluice.Planner) error {
	if len(ev.Value) != 3 {
		return fmt.Errorf("windowop: an event of %d bytes, want 3", len(ev.Value))
	}
	a, b := []byte{'k', ev.Value[0]}, []byte{'k', ev.Value[1]}
	p.Write(sluice.DefaultTable, a, 0, nil)
	if ev.Value[2] != 0 {
		p.Window(sluice.DefaultTable, []byte{'w', ev.Value[1]}, 1, nil, Window, sluice.Key{Key: a}, sluice.Key{Key: b})
	}
	return nil
}

func add(c *sluice.Call) sluice.Effect {
	v, _ := c.Own()
	n := uint64(0)
	if len(v) == 8 {
		n = binary.LittleEndian.Uint64(v)
	}
	return sluice.Write(binary.LittleEndian.AppendUint64(nil, n+1))
}

func window(c *sluice.Call) sluice.Effect {
	var out []byte
	le := binary.LittleEndian
	for i := range c.Reads() {
		w := c.Window(i)
		out = le.AppendUint32(out, uint32(len(w)))
		for _, v := range w {
			found := uint32(0)
			if v.Found {
				found = 1
			}
			out = le.AppendUint32(out, v.Back)
			out = le.AppendUint32(out, found)
			out = le.AppendUint32(out, uint32(len(v.Bytes)))
			out = append(out, v.Bytes...)
		}
	}
	return sluice.Write(out)
}
