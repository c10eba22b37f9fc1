package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/clusterctl"
)

func newClusterScaleCmd() *cobra.Command {
	var f clusterFlags
	var operator, host string
	var wait bool
	cmd := &cobra.Command{
		Use:   "scale -c PIPELINE [--nats-url URL] --operator NAME [--host ID] [--wait] N",
		Short: "Change the number of workers of an operator on every host",
		Long: `Scale records in the cluster's assignment that the operator runs N workers
on every host (with --host, on that host alone), by compare-and-set: two scales
at once are both recorded, one after the other. Every live host changes the
operator's workers at its next batch boundary once it sees the record (each
host reads it every 200 ms), as sluice workers does on one host: a keyed
operator's key groups change worker, its state stays in place, nothing is lost
or run twice. A host that starts later, or again, starts with the recorded
count instead of the pipeline file's parallelism. A scale without --host drops
the hosts' own counts of the operator.

Refused, with nothing recorded: an operator the pipeline file does not have,
one that is not stateless (map, filter, flatmap) or keyed (a transactional
operator's workers are its scheduler's), an N outside 1 to 65536, a --host that
has never joined. A host refuses a record edited by hand into one it cannot
apply, and applies nothing.

With --wait it then waits until every live host reports that it runs the
count the record gives it, as sluice cluster status shows (interrupt to stop
waiting; the hosts go on).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			const name = "cluster scale"
			n, err := strconv.Atoi(args[0])
			if err != nil || n < 1 {
				return &usageError{fmt.Sprintf("%s: %q is not a number of workers (a whole number of at least 1)", name, args[0])}
			}
			if operator == "" {
				return &usageError{name + ": --operator is required (the operator whose workers change)"}
			}
			f.operator = operator // the stage that runs it, in a pipeline cut into stages
			cc, err := f.open(cmd.Context(), name)
			if err != nil {
				return err
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			a, err := cc.admin.Scale(ctx, operator, host, n, "cli")
			cancel()
			var re *clusterctl.RefusedError
			switch {
			case errors.As(err, &re) && re.Field == "host":
				return fmt.Errorf("%s: --host %s: %w", name, host, re)
			case err != nil:
				return fmt.Errorf("%s: %w", name, err)
			}
			w := cmd.OutOrStdout()
			where := "every host"
			if host != "" {
				where = "host " + host
			}
			fmt.Fprintf(w, "operator %s: %d workers on %s (workers epoch %d, revision %d)\n", operator, n, where, a.Workers.Epoch, a.Revision)
			if !wait {
				return nil
			}
			return cc.waitScaled(cmd.Context(), w, name, operator)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&operator, "operator", "", "the stateless or keyed operator whose workers change (required)")
	cmd.Flags().StringVar(&host, "host", "", "record the count for this host alone, by id (default: every host)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every live host runs the recorded count (interrupt to stop waiting; the hosts go on)")
	return cmd
}

// waitScaled polls the cluster until every live host reports that it runs
// the count the workers record gives it for operator op, and says so.
func (c *clusterConn) waitScaled(ctx context.Context, w io.Writer, name, op string) error {
	began := time.Now()
	t := time.NewTicker(clusterPoll)
	defer t.Stop()
	var pending []string
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: stopped waiting for hosts %s to run the recorded count of operator %s (they go on): %w",
				name, orNone(strings.Join(pending, ", ")), op, ctx.Err())
		case <-t.C:
		}
		a, err := c.cluster.Assignment(ctx)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		members, err := c.cluster.Members(ctx)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		reports, err := c.cluster.Reports(ctx)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("%s: %w", name, err)
		}
		pending = pending[:0]
		var runs []string
		for _, m := range members {
			want, ok := a.Workers.For(op, m.ID)
			if !ok {
				continue
			}
			if got, ok := reports[m.ID].Workers[op]; !ok || got != want {
				pending = append(pending, m.ID)
				continue
			}
			runs = append(runs, fmt.Sprintf("%s %d", m.ID, want))
		}
		if len(pending) > 0 {
			continue
		}
		slices.Sort(runs)
		_, err = fmt.Fprintf(w, "every live host runs the recorded count of operator %s after %v: %s\n", op,
			time.Since(began).Round(time.Millisecond), orNone(strings.Join(runs, ", ")))
		return err
	}
}

// printWorkers writes the worker counts part of st: the counts scales
// recorded, whether a scale is in progress, and what each live host
// reports it runs.
func printWorkers(w io.Writer, st *schema.ClusterStatus) error {
	cw := st.Workers
	if cw == nil {
		_, err := fmt.Fprintln(w, "\nworkers: the pipeline file's (no scale recorded)")
		return err
	}
	if len(cw.Pending) > 0 {
		fmt.Fprintf(w, "\nworkers: epoch %d, scale in progress: scaled %s; not yet %s\n",
			cw.Epoch, orNone(strings.Join(cw.Scaled, ", ")), strings.Join(cw.Pending, ", "))
	} else {
		fmt.Fprintf(w, "\nworkers: epoch %d, run by every live host\n", cw.Epoch)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATOR\tWORKERS\tHOSTS' OWN\tEPOCH\tBY")
	for _, o := range cw.Operators {
		count := "-"
		if o.Count > 0 {
			count = strconv.Itoa(o.Count)
		}
		var own []string
		for _, h := range slices.Sorted(maps.Keys(o.Hosts)) {
			own = append(own, fmt.Sprintf("%s %d", h, o.Hosts[h]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", o.Operator, count, orNone(strings.Join(own, ", ")), o.Epoch, o.By)
	}
	fmt.Fprintln(tw, "\nHOST\tOPERATOR\tRUNS\tRECORDED")
	for _, h := range st.Hosts {
		if !h.Live {
			continue
		}
		for _, o := range cw.Operators {
			want, ok := (&cluster.Workers{Operators: map[string]cluster.OperatorWorkers{o.Operator: {Count: o.Count, Hosts: o.Hosts}}}).For(o.Operator, h.ID)
			recorded := "-"
			if ok {
				recorded = strconv.Itoa(want)
			}
			runs := "none"
			if n, ok := h.Workers[o.Operator]; ok {
				runs = strconv.Itoa(n)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.ID, o.Operator, runs, recorded)
		}
	}
	return tw.Flush()
}
