package main

import (
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "Measure the user-level figures: Wasm call path, NATS pipeline, keyed state commits",
	}
}
