package countlib_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/wordcount/countlib"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// The harness runs the operator a plugin registers: here the Counter, as
// plugins/wordcount and plugins/internal/slowcount register it.
func init() {
	c := &countlib.Counter{}
	sluice.Keyed(c.Handle)
}

// TestCounter checks the counts a record's key gets, what is stored, and
// that a stored count that is not a number rejects the record and is left
// as it was.
func TestCounter(t *testing.T) {
	h := sluicetest.New().Declare("counts")
	outs, rejects, err := h.Process(sluicetest.KV("the", "the"), sluicetest.KV("cat", "cat"), sluicetest.KV("the", "the"))
	if err != nil || len(rejects) != 0 {
		t.Fatal(err, rejects)
	}
	var got []string
	for _, o := range outs {
		got = append(got, fmt.Sprintf("%s=%s", o.Key, o.Value))
	}
	if strings.Join(got, " ") != "the=1 cat=1 the=2" {
		t.Errorf("outputs %v", got)
	}
	if v, _ := h.State("counts", "the"); string(v) != "2" {
		t.Errorf("stored count %q", v)
	}

	h.SetState("counts", "bad", []byte("many"))
	_, rejects, err = h.Process(sluicetest.KV("bad", "x"))
	if err != nil || len(rejects) != 1 || !strings.Contains(rejects[0].Message, `stored count of key "bad": "many" is not a decimal number`) {
		t.Errorf("corrupt count: %v, %+v", err, rejects)
	}
	if v, _ := h.State("counts", "bad"); string(v) != "many" {
		t.Errorf("corrupt count overwritten: %q", v)
	}
}
