// Command inplaceguest is a MapInPlace operator used by the SDK's
// WebAssembly tests: it upper-cases ASCII values in place, so that most
// records are forwarded as encoded; it renames the key on "rekey", tags
// records with a header on "tag", bumps the time on "later", rejects the
// value "bad" and panics on "panic".
package main

import (
	"errors"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	sluice.MapInPlace(func(r *sluice.Record) error {
		switch string(r.Value) {
		case "bad":
			return errors.New("value is bad")
		case "panic":
			panic("asked to panic")
		case "rekey":
			r.Key = append([]byte("re-"), r.Key...)
		case "tag":
			r.SetHeader("tag", []byte("t"))
		case "later":
			r.Time += 1000
		}
		for i, c := range r.Value {
			if 'a' <= c && c <= 'z' {
				r.Value[i] = c - 'a' + 'A'
			}
		}
		return nil
	})
}
