// Command txnop is a test guest of the deterministic environment: a
// transactional operator, written with the Go SDK, that declares one
// operation per event on the event's key, whose function writes the time
// time.Now reads and a number from math/rand seeded from crypto/rand.
package main

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mathrand "math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	sluice.Transactional(sluice.Txn{
		Plan: func(ev sluice.Record, p *sluice.Planner) error {
			p.Write(sluice.DefaultTable, ev.Key, 0, nil)
			p.Write(sluice.DefaultTable, ev.Key, 0, nil)
			return nil
		},
		Funcs: []sluice.TxnFunc{stamp},
	})
}

func stamp(c *sluice.Call) sluice.Effect {
	var seed [16]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return sluice.Fail(err)
	}
	rnd := mathrand.New(mathrand.NewPCG(binary.LittleEndian.Uint64(seed[:]), binary.LittleEndian.Uint64(seed[8:])))
	return sluice.Write(fmt.Appendf(nil, "%d %d", time.Now().UnixNano(), rnd.Uint64()))
}
