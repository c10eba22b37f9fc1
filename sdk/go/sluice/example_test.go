package sluice_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// These examples show registrations; a plugin makes exactly one, from an
// init function of its main package.

func ExampleMap() {
	sluice.Map(func(r sluice.Record) (sluice.Record, error) {
		r.Value = bytes.TrimSpace(r.Value) // re-slicing the input is fine
		r.SetHeader("trimmed", []byte("yes"))
		return r, nil
	})
}

func ExampleMapInPlace() {
	sluice.MapInPlace(func(r *sluice.Record) error {
		// Masks the digits of the value in place: the record keeps its
		// slices, so the SDK forwards its encoding instead of encoding it.
		for i, c := range r.Value {
			if '0' <= c && c <= '9' {
				r.Value[i] = '#'
			}
		}
		if len(r.Key) == 0 {
			r.Key = []byte("unkeyed") // a new slice: this output is encoded
		}
		return nil
	})
}

func ExampleFilter() {
	sluice.Filter(func(r sluice.Record) (bool, error) {
		return len(r.Value) > 0, nil
	})
}

func ExampleFlatMap() {
	sluice.FlatMap(func(r sluice.Record, out *sluice.Emitter) error {
		for _, f := range bytes.Split(r.Value, []byte(",")) {
			out.Emit(sluice.Record{Key: r.Key, Value: f, Time: r.Time})
		}
		return nil
	})
}

func ExampleKeyed() {
	sluice.Keyed(func(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
		total, _ := strconv.ParseInt(string(r.Value), 10, 64)
		if v, ok := st.Get(); ok {
			prev, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return err // dead-letters r
			}
			total += prev
		}
		v := strconv.AppendInt(nil, total, 10)
		st.Put(v)
		st.Table("last_seen").Put(strconv.AppendInt(nil, r.Time, 10)) // another declared table, same key
		out.Emit(sluice.Record{Key: r.Key, Value: v, Time: r.Time})
		return nil
	})
}

func ExampleConfigure() {
	var cfg struct {
		Threshold int `json:"threshold"`
	}
	sluice.Configure(func(config []byte) error {
		cfg.Threshold = 10 // the default; config is null when the pipeline gives none
		if err := json.Unmarshal(config, &cfg); err != nil {
			return err
		}
		if cfg.Threshold < 0 {
			return errors.New(`"threshold" must not be negative`)
		}
		return nil
	})
}

func ExampleLogf() {
	sluice.Logf(sluice.LevelWarn, "skipping %d malformed records", 3)
}
