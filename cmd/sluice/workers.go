package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func newWorkersCmd() *cobra.Command {
	var f apiFlags
	cmd := &cobra.Command{
		Use:   "workers --operator NAME [-c PIPELINE | --data-dir DIR] [--addr HOST:PORT] [--token T] [--timeout D] N",
		Short: "Change the number of workers of a running stateless or keyed operator",
		Long: `Workers asks the running host to run the operator on N workers. The new
workers' plugin instances are made first; then, at the next batch boundary,
a keyed operator's key groups change owner (those of workers that go away,
and shares for new ones; no other group moves) and the next batch runs on
the new workers. State stays where it is; nothing is lost or run twice. A
transactional operator's workers are its scheduler's (operators[].workers in
the pipeline file) and are refused here, as is a change while a swapped-in
plugin is on trial.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return &usageError{fmt.Sprintf("workers: %q is not a number of workers (a whole number of at least 1)", args[0])}
			}
			if err := f.resolve("workers"); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			res, err := f.client().SetWorkers(ctx, f.operator, n)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "operator %s: %d -> %d workers\n", res.Operator, res.From, res.To)
			return err
		},
	}
	f.register(cmd)
	return cmd
}
