package main

import (
	"github.com/sluicehq/sluice/plugins/nongrepsum/nongrepsumop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(nongrepsumop.New()) }
