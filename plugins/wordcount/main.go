package main

import (
	"github.com/sluicehq/sluice/plugins/wordcount/countlib"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	c := &countlib.Counter{}
	sluice.Keyed(c.Handle)
}
