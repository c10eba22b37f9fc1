package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/runner"
)

// errControlOff is what the doctor says of a host whose pipeline runs no
// control plane.
var errControlOff = errors.New("control is off: add a control: section to the pipeline file (docs/control.md)")

// doctorFlags find the running host, as the other commands that call its
// API do, but the token is needed only to ask for a round (or under
// http.auth: all).
type doctorFlags struct {
	addr, token, dataDir, config string
	timeout                      time.Duration
}

func (f *doctorFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "", "the host's HTTP API address (default: the one the running host wrote to DATA-DIR/"+runner.AddrFile+", else http.addr of -c PIPELINE, else "+pipeline.DefaultHTTPAddr+")")
	fl.StringVar(&f.token, "token", "", "the API token, needed by round and under http.auth: all (default: $"+runner.TokenEnv+", else DATA-DIR/"+runner.TokenFile+")")
	fl.StringVar(&f.dataDir, "data-dir", "", "the host's data directory, where it wrote its address and token (default: data_dir of -c PIPELINE)")
	fl.StringVarP(&f.config, "config", "c", "", "the running pipeline's file, for its address and data directory")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for the host")
}

// client resolves the host's address and token from the flags, the
// pipeline file, the environment and the data directory.
func (f *doctorFlags) client(name string) (*api.Client, error) {
	if f.timeout <= 0 {
		return nil, &usageError{fmt.Sprintf("%s: --timeout %v: want a positive duration", name, f.timeout)}
	}
	configured := ""
	if f.config != "" {
		p, err := pipeline.Load(f.config)
		if err != nil {
			return nil, err
		}
		configured = p.HTTP.Addr
		if f.dataDir == "" {
			f.dataDir = p.DataDir
		}
	}
	if f.addr == "" && f.dataDir != "" {
		if addr, err := runner.ReadAddr(f.dataDir); err == nil && addr != "" {
			f.addr = addr
		}
	}
	if f.addr == "" && configured != "" && configured != "off" {
		f.addr = configured
	}
	if f.addr == "" {
		f.addr = pipeline.DefaultHTTPAddr
	}
	if f.token == "" {
		f.token = os.Getenv(runner.TokenEnv)
	}
	if f.token == "" && f.dataDir != "" {
		if tok, err := runner.ReadToken(f.dataDir); err == nil {
			f.token = tok
		}
	}
	return &api.Client{Addr: f.addr, Token: f.token}, nil
}

// explain turns an error of the host's API into what the doctor says of
// it.
func (f *doctorFlags) explain(name string, err error) error {
	var se *api.StatusError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && se.Code == http.StatusUnauthorized:
		return fmt.Errorf("%s: the host at %s wants its API token: give --token, $%s, --data-dir DIR or -c PIPELINE: %w", name, f.addr, runner.TokenEnv, err)
	case errors.As(err, &se) && se.Code == http.StatusNotFound && strings.Contains(se.Message, "control plane is off"):
		return fmt.Errorf("%s: %w", name, errControlOff)
	case errors.As(err, &se) && se.Code == http.StatusNotFound:
		return fmt.Errorf("%s: the host at %s has no control plane routes (a sluice older than this one?): %w", name, f.addr, err)
	case errors.As(err, &se):
		return fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Errorf("%s: no host answers at %s: is the pipeline running? (give --addr, or -c PIPELINE or --data-dir DIR of the running host): %w", name, f.addr, err)
}

func newDoctorCmd() *cobra.Command {
	var f doctorFlags
	var asJSON bool
	var last int
	cmd := &cobra.Command{
		Use:   "doctor [-c PIPELINE | --data-dir DIR] [--addr HOST:PORT] [--token T] [--timeout D] [--json] [--last N]",
		Short: "Show a running host's control plane: its findings, its workers' health and its decisions",
		Long: `Doctor reads the control plane of a running host (GET /api/v1/control) and
prints whether it is on and with which policies; the job doctor's findings,
each with its cause, subject, summary, evidence and recommendation; each
worker's health as the last round saw it (arrival and service rates,
utilization, delay, predicted delay and state: good, moderate or severe);
and the last decisions, newest first, with their time, policy, action,
reason and outcome (applied, kept, rolled back or failed).

The control plane runs when the pipeline file has a control: section
(docs/control.md); without one, doctor says so. With --json it prints the
document as the API answers it (docs/api.md). "sluice doctor round" asks
for a round now.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if last < 0 {
				return &usageError{fmt.Sprintf("doctor: --last %d: want 0 (all) or more", last)}
			}
			c, err := f.client("doctor")
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			doc, err := c.Control(ctx)
			if err != nil {
				return f.explain("doctor", err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			if !doc.Enabled {
				return fmt.Errorf("doctor: the host at %s: %w", f.addr, errControlOff)
			}
			return printDoctor(cmd.OutOrStdout(), doc, last, time.Now())
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the document as GET /api/v1/control answers it (docs/api.md)")
	cmd.Flags().IntVar(&last, "last", 10, "how many of the last decisions to print (0: all the host keeps)")
	cmd.AddCommand(newDoctorRoundCmd())
	return cmd
}

func newDoctorRoundCmd() *cobra.Command {
	var f doctorFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "round [-c PIPELINE | --data-dir DIR] [--addr HOST:PORT] [--token T] [--timeout D] [--json] [REASON]",
		Short: "Run a management round of the control plane now and print its decision",
		Long: `Round asks the running host for a management round now (POST
/api/v1/control/round, with the API token), REASON recorded as its trigger,
and prints the decision applied in it, or that it decided nothing (the lock
after a decision holds, or no policy proposed anything).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{fmt.Sprintf("doctor round: want at most one REASON (quote it), not %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client("doctor round")
			if err != nil {
				return err
			}
			if c.Token == "" {
				return &usageError{"doctor round: no API token: give --token, $" + runner.TokenEnv + ", --data-dir DIR or -c PIPELINE"}
			}
			reason := ""
			if len(args) == 1 {
				reason = args[0]
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			d, err := c.ControlRound(ctx, reason)
			if err != nil {
				return f.explain("doctor round", err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			if d == nil {
				_, err := fmt.Fprintln(w, "the round decided nothing")
				return err
			}
			return printDecision(w, *d)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision as the API answers it (null when none)")
	return cmd
}

// printDoctor writes doc as text: at most last decisions (0: all).
func printDoctor(w io.Writer, doc schema.Control, last int, now time.Time) error {
	fmt.Fprintf(w, "control plane: on, policies %s (highest priority first)\n", orNone(strings.Join(doc.Policies, ", ")))
	if doc.LastRound.IsZero() {
		fmt.Fprintf(w, "rounds: %d\n", doc.Rounds)
	} else {
		ago := ""
		if d := now.Sub(doc.LastRound); d >= 0 {
			ago = fmt.Sprintf(" (%s ago)", d.Round(time.Second))
		}
		fmt.Fprintf(w, "rounds: %d, the last at %s%s\n", doc.Rounds, doc.LastRound.Local().Format(time.TimeOnly), ago)
	}
	if doc.LockedUntil.After(now) {
		fmt.Fprintf(w, "locked: no decision is applied before %s\n", doc.LockedUntil.Local().Format(time.TimeOnly))
	}

	fmt.Fprintf(w, "\nfindings (%d):\n", len(doc.Findings))
	if len(doc.Findings) == 0 {
		fmt.Fprintln(w, "  none: the job doctor finds nothing wrong")
	}
	for _, f := range doc.Findings {
		fmt.Fprintf(w, "  %s of %s: %s\n", f.Cause, f.Subject, f.Summary)
		if len(f.Evidence) > 0 {
			fmt.Fprintf(w, "    evidence: %s\n", evidenceText(f.Evidence))
		}
		fmt.Fprintf(w, "    recommendation: %s\n", f.Recommendation)
		if !f.Since.IsZero() {
			fmt.Fprintf(w, "    since %s\n", f.Since.Local().Format(time.DateTime))
		}
	}

	fmt.Fprintf(w, "\nworkers (%d):\n", len(doc.Workers))
	if len(doc.Workers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  operator\tworker\thost\tkey groups\tarrival/s\tservice/s\tutilization\tdelay\tpredicted\tstate")
		for _, h := range doc.Workers {
			predicted := seconds(h.PredictedSeconds)
			if h.Saturated {
				predicted = "saturated"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\n", h.Operator, h.Worker, dash(h.Host), h.KeyGroups,
				h.ArrivalRate, h.ServiceRate, h.Utilization, seconds(h.DelaySeconds), predicted, h.State)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	ds := doc.Decisions
	if last > 0 && len(ds) > last {
		ds = ds[:last]
	}
	fmt.Fprintf(w, "\ndecisions (%d of %d, newest first):\n", len(ds), len(doc.Decisions))
	if len(ds) == 0 {
		fmt.Fprintln(w, "  none yet")
	}
	for _, d := range ds {
		if err := printDecision(w, d); err != nil {
			return err
		}
	}
	return nil
}

// printDecision writes one decision: its time, policy, action, reason
// and outcome, then its evidence.
func printDecision(w io.Writer, d schema.Decision) error {
	outcome := d.Outcome
	if d.Error != "" {
		outcome += ": " + d.Error
	}
	if _, err := fmt.Fprintf(w, "  %s  %s  %s  [%s]\n    reason: %s\n", d.Time.Local().Format(time.TimeOnly), d.Policy, actionText(d.Action), outcome, d.Reason); err != nil {
		return err
	}
	for _, l := range []struct {
		what string
		ev   []schema.Evidence
	}{{"evidence", d.Evidence}, {"predicted", d.Predicted}, {"observed", d.Observed}} {
		if len(l.ev) > 0 {
			fmt.Fprintf(w, "    %s: %s\n", l.what, evidenceText(l.ev))
		}
	}
	if d.Trigger != "" {
		fmt.Fprintf(w, "    trigger: %s\n", d.Trigger)
	}
	if len(d.Others) > 0 {
		fmt.Fprintf(w, "    not applied: %s\n", strings.Join(d.Others, "; "))
	}
	return nil
}

// actionText writes an action in a few words: "set-workers count 2 -> 3",
// "move-groups count: group 7 worker 1 -> 0", "activate-host p1".
func actionText(a schema.Action) string {
	s := a.Kind
	if a.Operator != "" {
		s += " " + a.Operator
	}
	if a.Host != "" {
		s += " " + a.Host // activate-host, release-host
	}
	if a.Kind == "set-workers" {
		return fmt.Sprintf("%s %d -> %d", s, a.From, a.To)
	}
	moves := make([]string, 0, len(a.Moves))
	for _, m := range a.Moves {
		if m.FromHost != "" || m.ToHost != "" {
			moves = append(moves, fmt.Sprintf("group %d %s -> %s", m.Group, orNone(m.FromHost), orNone(m.ToHost)))
		} else {
			moves = append(moves, fmt.Sprintf("group %d worker %d -> %d", m.Group, m.FromWorker, m.ToWorker))
		}
	}
	if len(moves) > 0 {
		s += ": " + strings.Join(moves, ", ")
	}
	return s
}

// evidenceText writes measurements as "delay of count/1 180ms, ...".
func evidenceText(ev []schema.Evidence) string {
	parts := make([]string, len(ev))
	for i, e := range ev {
		switch e.Unit {
		case "s":
			parts[i] = e.Name + " " + seconds(e.Value)
		case "":
			parts[i] = fmt.Sprintf("%s %.4g", e.Name, e.Value)
		default:
			parts[i] = fmt.Sprintf("%s %.4g %s", e.Name, e.Value, e.Unit)
		}
	}
	return strings.Join(parts, ", ")
}

// seconds writes a number of seconds as a duration, to the microsecond.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

// dash is s, or "-" for "" (a column of a table).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
