package sluicetest_test

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// The test binary registers a keyed operator that sums numeric values per
// key (see harness_test.go).
func ExampleHarness() {
	h := sluicetest.New().Declare("sums")
	out, rejects, err := h.Process(sluicetest.KV("a", "1"), sluicetest.KV("a", "x"), sluicetest.KV("a", "2"))
	if err != nil {
		panic(err)
	}
	for _, o := range out {
		fmt.Printf("output of record %d: %s=%s\n", o.Origin, o.Key, o.Value)
	}
	for _, r := range rejects {
		fmt.Printf("record %d rejected: %s\n", r.Origin, r.Message)
	}
	v, _ := h.State("sums", "a")
	fmt.Printf("stored: %s\n", v)
	// Output:
	// output of record 0: a=sum=1
	// output of record 2: a=sum=3
	// record 1 rejected: value "x" is not a number
	// stored: 3
}
