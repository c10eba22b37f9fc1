package state_test

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/state"
)

// A keyed counter: each record increments its key's count through a
// worker's Session; at the barrier the executor commits the batch's state
// together with the position of the last record it consumed.
func Example() {
	dir, _ := os.MkdirTemp("", "sluice-state-example-")
	defer os.RemoveAll(dir)

	opts := state.DefaultOptions()
	opts.Logger = slog.New(slog.DiscardHandler)
	store, err := state.Open(dir, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	counts := store.Table("counts")
	worker := store.NewSession()

	var buf [8]byte
	for _, key := range []string{"ann", "bob", "ann"} {
		sp := worker.Savepoint() // to undo this record's writes if it fails
		v, _, err := worker.Get(counts, []byte(key))
		if err != nil { // for instance a key group this worker does not own
			worker.RollbackTo(sp)
			continue
		}
		n := uint64(0)
		if len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		binary.BigEndian.PutUint64(buf[:], n+1)
		_ = worker.Put(counts, []byte(key), buf[:])
	}
	if err := store.Commit(map[string]uint64{"clicks": 3}); err != nil {
		fmt.Println(err)
		return
	}
	worker.Reset()
	_ = store.Close()

	// After a restart: the committed state and where to resume.
	store, _ = state.Open(dir, opts)
	defer store.Close()
	fmt.Println("resume clicks after", store.Positions()["clicks"])
	_ = store.Scan("counts", func(k, v []byte) error {
		fmt.Printf("%s=%d\n", k, binary.BigEndian.Uint64(v))
		return nil
	})
	// Output:
	// resume clicks after 3
	// ann=2
	// bob=1
}
