package main

import (
	"github.com/sluicehq/sluice/plugins/bidding/biddingop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(biddingop.New()) }
