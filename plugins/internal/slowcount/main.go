// Command slowcount counts records per key exactly as plugins/wordcount
// does (plugins/wordcount/countlib), after spinning for about 1 ms a
// record (plugins/internal/busy): a slower version of wordcount, which
// `sluice bench control` swaps in for the job doctor to name as a plugin
// version slower than the one before it.
//
// Build: sluice plugin build plugins/internal/slowcount
package main

import (
	"github.com/sluicehq/sluice/plugins/internal/busy"
	"github.com/sluicehq/sluice/plugins/wordcount/countlib"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// spinNS is how long each record's busy work lasts, about: several times
// the 200 µs a record of a worker the control benchmark caps at 5,000
// records/s (its busy time per record, the cap's sleep included).
const spinNS = 1_000_000

func main() {}

func init() {
	c := &countlib.Counter{}
	sluice.Keyed(func(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
		_ = busy.Spin(spinNS)
		return c.Handle(r, st, out)
	})
}
