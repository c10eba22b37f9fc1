package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

func newClusterHostCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Take a pool host into service, or give an active host back to the pool",
		Long: `A pool host is one started with sluice run --pool: it joins the cluster and
holds a lease, but is given no key groups. The host commands change the pool
record of the cluster's assignment by compare-and-set; the coordinator (the
live host with the lowest id) then rebalances the key groups over the active
hosts. docs/cluster.md describes the pool.`,
	}
	cmd.AddCommand(newClusterHostChangeCmd("activate"), newClusterHostChangeCmd("release"))
	return cmd
}

// newClusterHostChangeCmd makes `cluster host activate` or `cluster host
// release`.
func newClusterHostChangeCmd(verb string) *cobra.Command {
	var f clusterFlags
	var wait bool
	short, long := "Take a pool host into service: the key groups are rebalanced onto it",
		`Activate takes the pool host ID out of the pool. The coordinator's next round
(every 200 ms) rebalances the key groups over the live active hosts, ID among
them, by a migration. Refused: a host that has never joined, one that is not in
the pool, one that holds no lease.

With --wait it then waits until the host owns key groups and no migration is
in progress (interrupt to stop waiting; the hosts go on).`
	if verb == "release" {
		short, long = "Give an active host back to the pool: its key groups move to the others",
			`Release puts the host ID into the pool. The coordinator's next round moves its
key groups to the other live active hosts by a migration; the host keeps
running, with no groups, until it is stopped or taken into service again.
Refused: a host that has never joined, the last live active host (its groups
would have nowhere to go), a host a migration in progress is moving groups to.

With --wait it then waits until the host owns no key group and no migration
is in progress (interrupt to stop waiting; the hosts go on).`
	}
	cmd := &cobra.Command{
		Use:   verb + " -c PIPELINE [--nats-url URL] [--wait] ID",
		Short: short,
		Long:  long,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "cluster host " + verb
			id := args[0]
			cc, err := f.open(cmd.Context(), name)
			if err != nil {
				return err
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			var a *cluster.Assignment
			if verb == "activate" {
				a, err = cc.admin.Activate(ctx, id, "cli")
			} else {
				a, err = cc.admin.Release(ctx, id, "cli")
			}
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			w := cmd.OutOrStdout()
			state := "in service"
			if a.Pooled(id) {
				state = "in the pool"
			}
			fmt.Fprintf(w, "host %s: %s (pool epoch %d, revision %d); pool: %s\n", id, state, a.PoolEpoch(), a.Revision, orNone(strings.Join(a.PoolHosts(), ", ")))
			if !wait {
				return nil
			}
			done := func(a *cluster.Assignment) bool {
				if a.Migration != nil {
					return false
				}
				if verb == "activate" {
					return slices.Contains(a.Owners, id)
				}
				return migrate.Drained(a, id)
			}
			t := time.NewTicker(clusterPoll)
			defer t.Stop()
			for {
				a, err := cc.cluster.Assignment(cmd.Context())
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				if done(a) {
					fmt.Fprintf(w, "host %s: %d of %d key groups\n", id, len(migrate.Owned(a, id)), a.KeyGroups)
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-t.C:
				}
			}
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the key groups have moved")
	return cmd
}
