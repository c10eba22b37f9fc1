package main

import (
	"github.com/sluicehq/sluice/plugins/toll/tollop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(tollop.New()) }
