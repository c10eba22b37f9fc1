// Command mapop is a test guest of the deterministic environment: a map
// operator, written with the Go SDK as a user would, whose output for each
// record is the time time.Now reads and a number from math/rand, seeded
// from crypto/rand (which reads the host's random_get). A record whose
// value is "panic" makes the guest panic, so that the host runs the batch
// again record by record.
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

func init() { sluice.Map(stamp) }

func stamp(r sluice.Record) (sluice.Record, error) {
	if string(r.Value) == "panic" {
		panic("asked to panic")
	}
	var seed [16]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return sluice.Record{}, err
	}
	rnd := mathrand.New(mathrand.NewPCG(binary.LittleEndian.Uint64(seed[:]), binary.LittleEndian.Uint64(seed[8:])))
	r.Value = fmt.Appendf(nil, "%d %d", time.Now().UnixNano(), rnd.Uint64())
	return r, nil
}
