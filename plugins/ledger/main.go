package main

import (
	"github.com/sluicehq/sluice/plugins/ledger/ledgerop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(ledgerop.New()) }
