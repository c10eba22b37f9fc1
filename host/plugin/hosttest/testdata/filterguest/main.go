// Command filterguest is a Filter operator used by the SDK's WebAssembly
// tests: it keeps values starting with "keep" and rejects the value "err".
package main

import (
	"bytes"
	"errors"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	sluice.Filter(func(r sluice.Record) (bool, error) {
		if string(r.Value) == "err" {
			return false, errors.New("value is err")
		}
		return bytes.HasPrefix(r.Value, []byte("keep")), nil
	})
}
