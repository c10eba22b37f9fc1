package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// keyRunningPrefix prefixes the keys of the hosts' reports of the modules
// they run: running.<id>.
const keyRunningPrefix = "running."

// ErrSwapPending is matched, with errors.Is, by the error of a migration
// refused because a swap (or rollback) recorded in the table is not yet
// run by every live host (see Pending).
var ErrSwapPending = errors.New("a plugin swap is not yet applied by every live host")

// Versions is the code the hosts of the cluster run: per operator, the
// module every host must run. It is part of the assignment's table, so
// that a swap and a migration are ordered by the same compare-and-set:
// SetVersion refuses a swap while a migration is in progress, and
// package migrate refuses to begin a migration while a swap is pending.
//
// An operator the record does not name runs the module of the pipeline
// file (or the one its host resumed with, see package runner).
type Versions struct {
	// Epoch counts the swaps and rollbacks recorded; each one's
	// OperatorVersion carries the epoch it was recorded at.
	Epoch uint64 `json:"epoch"`
	// Operators holds the module of each operator swapped at least once.
	Operators map[string]OperatorVersion `json:"operators"`
}

// OperatorVersion is the module an operator runs on every host.
type OperatorVersion struct {
	// SHA256 is the module's hash, in lowercase hex: its name in the
	// host's registry and in the cluster's module store.
	SHA256 string `json:"sha256"`
	// Name is the module's name (the file it was uploaded as).
	Name string `json:"name"`
	// Epoch is Versions.Epoch when this module was recorded.
	Epoch uint64 `json:"epoch"`
	// Reason is "swap" or "rollback".
	Reason string `json:"reason"`
	// Host is the host whose API received the swap or rollback.
	Host string `json:"host"`
	// At is when it was recorded.
	At time.Time `json:"at"`
}

// Operator returns the module v records for operator op, if any; v may
// be nil.
func (v *Versions) Operator(op string) (OperatorVersion, bool) {
	if v == nil {
		return OperatorVersion{}, false
	}
	ov, ok := v.Operators[op]
	return ov, ok
}

// Reasons an OperatorVersion may give.
const (
	ReasonSwap     = "swap"
	ReasonRollback = "rollback"
)

// clone returns a deep copy of v (nil for nil).
func (v *Versions) clone() *Versions {
	if v == nil {
		return nil
	}
	c := *v
	c.Operators = maps.Clone(v.Operators)
	return &c
}

// validate checks v's invariants: every operator named, every hash 64
// lowercase hex digits, every epoch between 1 and v.Epoch, every reason
// known.
func (v *Versions) validate() error {
	if v == nil {
		return nil
	}
	for _, op := range slices.Sorted(maps.Keys(v.Operators)) {
		ov := v.Operators[op]
		f := fmt.Sprintf("versions.operators[%q]", op)
		if op == "" {
			return invalid(f, "an operator has a name")
		}
		if b, err := hex.DecodeString(ov.SHA256); err != nil || len(b) != 32 || strings.ToLower(ov.SHA256) != ov.SHA256 {
			return invalid(f+".sha256", "%q is not a SHA-256 in lowercase hex (64 digits)", ov.SHA256)
		}
		if ov.Name == "" {
			return invalid(f+".name", "empty: a module has a name")
		}
		if ov.Epoch < 1 || ov.Epoch > v.Epoch {
			return invalid(f+".epoch", "%d is not between 1 and the record's epoch %d", ov.Epoch, v.Epoch)
		}
		if ov.Reason != ReasonSwap && ov.Reason != ReasonRollback {
			return invalid(f+".reason", "%q is not %s or %s", ov.Reason, ReasonSwap, ReasonRollback)
		}
	}
	return nil
}

// SetVersion records that every host must run v for operator op: it
// bumps the epoch and gives it to v. It fails, matching ErrMigration and
// naming the migration, while a migration is in progress: a group moving
// between hosts must not change version on its way.
func (a *Assignment) SetVersion(op string, v OperatorVersion) error {
	if m := a.Migration; m != nil {
		return fmt.Errorf("cluster: %w: migration %s is in progress (step %d of %d): a plugin is swapped on every host only between migrations; wait for it to finish (sluice cluster status shows it)",
			ErrMigration, m.ID, m.Current+1, len(m.Steps))
	}
	if a.Versions == nil {
		a.Versions = &Versions{Operators: map[string]OperatorVersion{}}
	}
	if a.Versions.Operators == nil {
		a.Versions.Operators = map[string]OperatorVersion{}
	}
	a.Versions.Epoch++
	v.Epoch = a.Versions.Epoch
	a.Versions.Operators[op] = v
	return nil
}

// Running is a host's report of the modules it runs and of its
// operators' worker counts, in the cluster's bucket under running.<id>.
type Running struct {
	// Host is the host's id.
	Host string `json:"host"`
	// Operators holds the hash of the module each operator runs.
	Operators map[string]string `json:"operators"`
	// Epoch is the Versions.Epoch of the record the host last applied
	// whole (0 before any).
	Epoch uint64 `json:"epoch"`
	// Workers holds the number of workers each stateless or keyed
	// operator runs on the host (omitted by a host of an earlier build).
	Workers map[string]int `json:"workers,omitempty"`
	// At is when the host wrote the report.
	At time.Time `json:"at"`
}

// Runs reports whether r runs every module v records.
func (r Running) Runs(v *Versions) bool {
	if v == nil {
		return true
	}
	for op, ov := range v.Operators {
		if r.Operators[op] != ov.SHA256 {
			return false
		}
	}
	return true
}

// Pending returns the hosts of live that do not run every module a's
// record names, by their reports (a live host with no report is pending),
// sorted. None is pending when a records no versions.
func Pending(a *Assignment, reports map[string]Running, live []string) []string {
	if a.Versions == nil || len(a.Versions.Operators) == 0 {
		return nil
	}
	var out []string
	for _, h := range live {
		r, ok := reports[h]
		if !ok || !r.Runs(a.Versions) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// SwapPending returns an error matching ErrSwapPending naming the hosts of
// live that do not yet run a's record, or nil when every one does.
func SwapPending(a *Assignment, reports map[string]Running, live []string) error {
	p := Pending(a, reports, live)
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("cluster: %w: hosts %s do not run the modules of epoch %d yet (a plugin swap in progress); a migration begins once they do", ErrSwapPending, strings.Join(p, ", "), a.Versions.Epoch)
}

// Report writes r as host r.Host's report of the modules it runs.
func (c *Cluster) Report(ctx context.Context, r Running) error {
	if !nameRE.MatchString(r.Host) {
		return fmt.Errorf("cluster: %w: host id %q: use letters, digits, - and _", ErrBadConfig, r.Host)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cluster: encoding the report of host %s: %w", r.Host, err)
	}
	if _, err := c.kv.Put(ctx, keyRunningPrefix+r.Host, data); err != nil {
		return fmt.Errorf("cluster: writing bucket %s key %q: %w", BucketName(c.cfg.Pipeline), keyRunningPrefix+r.Host, err)
	}
	return nil
}

// Reports returns every host's last report of the modules it runs, by
// host id. A report that cannot be decoded (edited by hand) is an error
// naming its key.
func (c *Cluster) Reports(ctx context.Context) (map[string]Running, error) {
	es, err := entries(ctx, c.js, c.kv, keyRunningPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("cluster: listing the hosts' reports in bucket %s: %w", BucketName(c.cfg.Pipeline), err)
	}
	out := make(map[string]Running, len(es))
	for _, e := range es {
		var r Running
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return nil, fmt.Errorf("cluster: bucket %s key %q (revision %d): %w: not a report this build reads: %v",
				BucketName(c.cfg.Pipeline), e.Key(), e.Revision(), ErrInvalidAssignment, err)
		}
		r.Host = strings.TrimPrefix(e.Key(), keyRunningPrefix)
		out[r.Host] = r
	}
	return out, nil
}
