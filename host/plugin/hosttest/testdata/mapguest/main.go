// Command mapguest is a Map operator used by the SDK's WebAssembly tests:
// it upper-cases ASCII values, tags records with a header, rejects the value
// "bad", logs on "log", panics on "panic" and fails on "exit".
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

type config struct {
	Tag string `json:"tag"`
}

func main() {}

func init() {
	var cfg config
	sluice.Configure(func(b []byte) error {
		cfg = config{Tag: "none"}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return err
		}
		if cfg.Tag == "" {
			return errors.New(`"tag" must not be empty`)
		}
		return nil
	})
	sluice.Map(func(r sluice.Record) (sluice.Record, error) {
		switch string(r.Value) {
		case "bad":
			return r, errors.New("value is bad")
		case "log":
			sluice.Logf(sluice.LevelWarn, "record at %d asked to log", r.Time)
		case "panic":
			panic("asked to panic")
		}
		for i, c := range r.Value {
			if 'a' <= c && c <= 'z' {
				r.Value[i] = c - 'a' + 'A'
			}
		}
		r.SetHeader("tag", []byte(cfg.Tag))
		r.SetHeader("len", fmt.Appendf(nil, "%d", len(r.Value)))
		return r, nil
	})
}
