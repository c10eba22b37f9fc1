package main

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Aggregate(countSum{}) }

// accSize is the size of an accumulator: count, then sum.
const accSize = 16

// countSum counts the records of a window and sums their values.
type countSum struct{}

// errNotInteger dead-letters a record whose value is not a decimal integer.
var errNotInteger = errors.New("value is not a decimal integer")

func (countSum) Add(acc []byte, r sluice.Record) ([]byte, error) {
	v, err := strconv.ParseInt(string(r.Value), 10, 64)
	if err != nil || len(r.Value) > 0 && r.Value[0] == '+' {
		return nil, errNotInteger
	}
	if len(acc) != accSize {
		acc = make([]byte, accSize)
	}
	le := binary.LittleEndian
	le.PutUint64(acc, le.Uint64(acc)+1)
	le.PutUint64(acc[8:], le.Uint64(acc[8:])+uint64(v))
	return acc, nil
}

func (countSum) Merge(a, b []byte) ([]byte, error) {
	if len(a) != accSize || len(b) != accSize {
		return nil, errors.New("accumulator is not 16 bytes")
	}
	le := binary.LittleEndian
	le.PutUint64(a, le.Uint64(a)+le.Uint64(b))
	le.PutUint64(a[8:], le.Uint64(a[8:])+le.Uint64(b[8:]))
	return a, nil
}

func (countSum) Fire(key []byte, _ sluice.Window, acc []byte, out *sluice.Emitter) error {
	if len(acc) != accSize {
		return errors.New("accumulator is not 16 bytes")
	}
	le := binary.LittleEndian
	v := strconv.AppendUint(nil, le.Uint64(acc), 10)
	v = append(v, ',')
	v = strconv.AppendInt(v, int64(le.Uint64(acc[8:])), 10)
	out.Emit(sluice.Record{Key: key, Value: v})
	return nil
}
