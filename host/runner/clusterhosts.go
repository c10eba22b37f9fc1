package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/control"
	"github.com/sluicehq/sluice/host/migrate"
)

// The cluster-level scaling decision (control.hosts; docs/control.md):
// every host writes its load (cluster.Load, from its own controller's last
// round) under load.<id> once per control period, and the coordinator, the
// live host with the lowest id, reads the reports and the assignment and
// runs control.Hosts, a pure rule over them. Only the coordinator decides,
// one decision at a time; what it decides is applied by one
// compare-and-set of the assignment's pool record (migrate.Activate,
// migrate.Release) naming the pool epoch it decided on, so a decision
// made by a host that has stopped coordinating meanwhile is refused. The
// key groups then move by the coordinator's rebalance (a migration, at
// batch boundaries, so a transactional operator's tables never move
// mid-batch), during which no decision is made.

// hostCommandOutput bounds how much of a request or release command's
// output the log keeps (its end).
const hostCommandOutput = 4 << 10

// loadStale is how old a host's load report may be, in control periods,
// before the decision treats it as missing.
const loadStale = 5

// runHosts reports the host's load and, on the coordinator, makes the
// cluster-level scaling decision, every control period until ctx is
// done. It does nothing unless control.hosts is on.
func (h *Host) runHosts(ctx context.Context) {
	c := h.p.Control
	if !c.Hosts.Enabled || h.ctrl == nil || h.cluster == nil {
		return
	}
	rule, err := control.NewHosts(control.HostsConfig{Min: c.Hosts.Min, Max: c.Hosts.Max, Span: c.Hosts.Span, Lock: c.Lock,
		ScaleOutAbove: c.Hosts.ScaleOutAbove, ScaleInBelow: c.Hosts.ScaleInBelow, Request: c.Hosts.Request != ""})
	if err != nil {
		h.log.Error("control: hosts: the cluster-level scaling decision does not run", "err", err)
		return
	}
	d := &hostsDecider{h: h, rule: rule, log: h.log.With("component", "control")}
	t := time.NewTicker(c.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := d.round(ctx, time.Now()); err != nil && ctx.Err() == nil {
			d.log.Warn("control: hosts: a round failed; trying again next period", "err", err)
		}
	}
}

// hostsDecider is the coordinator's side of the cluster-level scaling
// decision.
type hostsDecider struct {
	h    *Host
	rule *control.Hosts
	log  *slog.Logger
	// releasing is the host this host gave back to the pool whose release
	// command has not run yet; "" when none.
	releasing string
	// checking is the ID of the decision the rule checks once it has
	// settled (control.Hosts.Check).
	checking uint64
}

// round reports the host's load and, when the host coordinates, makes a
// round of the decision.
func (d *hostsDecider) round(ctx context.Context, now time.Time) error {
	h, ch := d.h, d.h.cluster
	load := h.ctrl.Load()
	if err := ch.c.ReportLoad(ctx, cluster.Load{Host: ch.id, Utilisation: load.Utilisation, Saturated: load.Saturated,
		InputRate: load.InputRate, Behind: load.Behind, Groups: len(h.job.Groups()), At: now.UTC()}); err != nil {
		return err
	}
	live, err := migrate.Live(ctx, ch.c)
	if err != nil {
		return err
	}
	if len(live) == 0 || live[0] != ch.id {
		d.releasing = "" // another host coordinates
		return nil
	}
	a, err := ch.c.Assignment(ctx)
	if err != nil {
		return err
	}
	loads, err := ch.c.Loads(ctx)
	if err != nil {
		return err
	}
	f := hostsFigures(a, live, loads, now, loadStale*h.p.Control.Period)
	if d.releasing != "" {
		switch {
		case !a.Pooled(d.releasing):
			d.releasing = "" // taken into service again meanwhile
		case a.Migration == nil && migrate.Drained(a, d.releasing) && !d.rule.Checking(d.releasing):
			d.release(ctx, d.releasing, now)
			d.releasing = ""
		default:
			f.Releasing = d.releasing
		}
	}
	if c := d.rule.Check(f); c != nil {
		d.settle(ctx, c, a, len(f.Active), now)
		return nil
	}
	p := d.rule.Decide(f)
	if p == nil {
		return nil
	}
	dec := schema.Decision{Time: now, Trigger: "period", Policy: p.Policy, Action: p.Action, Reason: p.Reason,
		Evidence: p.Evidence, Predicted: p.Predicted, Outcome: control.OutcomeApplied}
	err = d.apply(ctx, p, a, len(f.Active))
	d.rule.Done(now, err == nil)
	if err != nil {
		dec.Outcome, dec.Error = control.OutcomeFailed, err.Error()
	}
	d.checking = h.ctrl.Record(dec).ID
	return nil
}

// apply applies a proposal of the rule: a pool change of the assignment
// a (by compare-and-set on its pool epoch), or the request command.
func (d *hostsDecider) apply(ctx context.Context, p *control.Proposal, a *cluster.Assignment, active int) error {
	ch := d.h.cluster
	change := cluster.PoolChange{Host: p.Action.Host, By: "control " + ch.id, Reason: p.Reason, Expect: true, Epoch: a.PoolEpoch()}
	switch p.Action.Kind {
	case control.ActionActivateHost:
		_, err := migrate.Activate(ctx, ch.c, change)
		return err
	case control.ActionReleaseHost:
		_, err := migrate.Release(ctx, ch.c, change)
		if err == nil {
			d.releasing = p.Action.Host
		}
		return err
	case control.ActionRequestHost:
		return d.command(ctx, "request", d.h.p.Control.Hosts.Request, []string{"SLUICE_ACTIVE_HOSTS=" + strconv.Itoa(active)})
	}
	return fmt.Errorf("action %q is not one of the hosts decision's", p.Action.Kind)
}

// settle records the check of the last decision applied and, when it
// made things worse and can be undone, undoes it (a decision of its own
// kind, not checked in turn).
func (d *hostsDecider) settle(ctx context.Context, c *control.HostsCheck, a *cluster.Assignment, active int, now time.Time) {
	outcome, errText := control.OutcomeKept, ""
	switch {
	case !c.Worse:
	case c.Undo == nil:
		errText = "made things worse (" + c.Why + ") and cannot be undone: the host is no longer where it was, or hosts.min or hosts.max forbids"
		d.log.Warn("control: hosts: a decision made things worse and cannot be undone", "action", control.Describe(c.Action), "why", c.Why)
	default:
		outcome = control.OutcomeRolledBack
		err := d.apply(ctx, c.Undo, a, active)
		d.rule.Done(now, false)
		if err != nil {
			outcome, errText = control.OutcomeFailed, "rolling back: "+err.Error()
			d.log.Warn("control: hosts: a decision made things worse and could not be rolled back", "why", c.Why, "err", err)
		} else {
			d.log.Info("control: hosts: decision rolled back", "why", c.Why, "undo", control.Describe(c.Undo.Action))
		}
	}
	d.h.ctrl.Settle(d.checking, outcome, c.Observed, errText)
}

// release runs the release command, if one is configured, for host,
// which holds no key group now, and records it as a decision.
func (d *hostsDecider) release(ctx context.Context, host string, now time.Time) {
	command := d.h.p.Control.Hosts.Release
	if command == "" {
		d.log.Info("control: hosts: the host given back to the pool holds no key group", "host", host)
		return
	}
	dec := schema.Decision{Time: now, Trigger: "host " + host + " drained", Policy: control.HostsPolicy,
		Action: schema.Action{Kind: control.ActionReleaseHost, Host: host},
		Reason: "host " + host + " holds no key group: the release command runs", Outcome: control.OutcomeApplied}
	if err := d.command(ctx, "release", command, []string{"SLUICE_HOST_ID=" + host}); err != nil {
		dec.Outcome, dec.Error = control.OutcomeFailed, err.Error()
	}
	d.h.ctrl.Record(dec)
}

// command runs a request or release command with sh -c, with the
// pipeline's name and env in its environment, for at most
// control.hosts.timeout, and logs its exit status and output. A command
// that fails or runs too long is an error, not a stop of the host.
func (d *hostsDecider) command(ctx context.Context, what, command string, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, d.h.p.Control.Hosts.Timeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(append(os.Environ(), "SLUICE_PIPELINE="+d.h.p.Name), env...)
	ownGroup(cmd)
	cmd.WaitDelay = time.Second // a child that keeps the output open
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if len(out) > hostCommandOutput {
		out = out[len(out)-hostCommandOutput:]
	}
	status := 0
	var exit *osexec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		status = -1
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("the %s command ran over control.hosts.timeout %v and was killed", what, d.h.p.Control.Hosts.Timeout)
	}
	log := d.log.Info
	if err != nil {
		log = d.log.Warn
	}
	log("control: hosts: ran the "+what+" command", "command", command, "exit_status", status, "took", time.Since(start).Round(time.Millisecond),
		"output", string(out), "err", err)
	if err != nil {
		return fmt.Errorf("the %s command (%s): exit status %d: %w", what, command, status, err)
	}
	return nil
}

// hostsFigures builds the decision's figures from the assignment, the live
// hosts and their load reports: a live active host with no report, or one
// older than stale, is missing.
func hostsFigures(a *cluster.Assignment, live []string, loads map[string]cluster.Load, now time.Time, stale time.Duration) control.ClusterFigures {
	f := control.ClusterFigures{At: now, Migrating: a.Migration != nil}
	groups := map[string]int{}
	for _, o := range a.Owners {
		groups[o]++
	}
	for _, id := range a.Active(live) {
		l, ok := loads[id]
		if !ok || now.Sub(l.At) > stale {
			f.Missing = append(f.Missing, id)
			continue
		}
		f.Active = append(f.Active, control.HostFigures{Host: id, Utilisation: l.Utilisation, Saturated: l.Saturated,
			Groups: groups[id], InputRate: l.InputRate, Behind: l.Behind})
	}
	for _, id := range a.PoolHosts() {
		for _, l := range live {
			if l == id {
				f.Pool = append(f.Pool, id)
			}
		}
	}
	return f
}
