// Command firereject is an aggregate (kind: aggregate) that counts the
// records of each key and window, for the executor's tests of a firing
// the guest rejects: the accumulator is the count, a little-endian uint64;
// a firing emits the count in decimal, except for key "k1", whose firings
// emit it and then fail, so the host must discard what they emitted and
// dead-letter them.
package main

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Aggregate(counter{}) }

type counter struct{}

func (counter) Add(acc []byte, _ sluice.Record) ([]byte, error) {
	if len(acc) != 8 {
		acc = make([]byte, 8)
	}
	binary.LittleEndian.PutUint64(acc, binary.LittleEndian.Uint64(acc)+1)
	return acc, nil
}

func (counter) Merge(a, b []byte) ([]byte, error) {
	if len(a) != 8 || len(b) != 8 {
		return nil, errors.New("accumulator is not 8 bytes")
	}
	binary.LittleEndian.PutUint64(a, binary.LittleEndian.Uint64(a)+binary.LittleEndian.Uint64(b))
	return a, nil
}

func (counter) Fire(key []byte, _ sluice.Window, acc []byte, out *sluice.Emitter) error {
	if len(acc) != 8 {
		return errors.New("accumulator is not 8 bytes")
	}
	out.Emit(sluice.Record{Key: key, Value: strconv.AppendUint(nil, binary.LittleEndian.Uint64(acc), 10)})
	if string(key) == "k1" {
		return errors.New("k1's firings are refused")
	}
	return nil
}
