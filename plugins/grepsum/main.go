package main

import (
	"github.com/sluicehq/sluice/plugins/grepsum/grepsumop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(grepsumop.New()) }
