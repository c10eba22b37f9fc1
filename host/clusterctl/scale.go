package clusterctl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/pipeline"
)

// Scalable returns nil when operator op of ops may have its workers
// changed to n, as `sluice workers` changes them on one host: it exists,
// is stateless (map, filter, flatmap) or keyed, and n is between 1 and
// cluster.MaxWorkers. Otherwise it returns a *RefusedError naming the
// operator and the value at fault (Field "operator" or "workers").
func Scalable(ops []pipeline.Operator, op string, n int) error {
	i := slices.IndexFunc(ops, func(o pipeline.Operator) bool { return o.Name == op })
	if i < 0 {
		names := make([]string, len(ops))
		for j := range ops {
			names[j] = ops[j].Name
		}
		return &RefusedError{Field: "operator", Msg: fmt.Sprintf("operator %q: the pipeline has no such operator (operators: %s)", op, orNone(strings.Join(names, ", ")))}
	}
	switch k := ops[i].Kind; k {
	case pipeline.KindMap, pipeline.KindFilter, pipeline.KindFlatMap, pipeline.KindKeyed:
	default:
		return &RefusedError{Field: "operator", Msg: fmt.Sprintf("operator %q is %s: only a stateless (map, filter, flatmap) or keyed operator's workers are changed at run time", op, k)}
	}
	if n < 1 || n > cluster.MaxWorkers {
		return &RefusedError{Field: "workers", Msg: fmt.Sprintf("operator %q: %d workers: want 1 to %d", op, n, cluster.MaxWorkers)}
	}
	return nil
}

// Scale records that operator op runs n workers on every live host (host
// "") or on host alone, by compare-and-set, and returns the assignment
// that holds it; by says who asks ("cli", "host h1"). Every host applies
// the count at its next batch boundary once it sees it, and a host that
// starts later starts with it.
//
// Refused, with a *RefusedError naming the field: an operator not in
// ad.Operators, not stateless or keyed, a count outside 1 to
// cluster.MaxWorkers, a host that has never joined. Nothing is written
// then.
func (ad *Admin) Scale(ctx context.Context, op, host string, n int, by string) (*cluster.Assignment, error) {
	if err := Scalable(ad.Operators, op, n); err != nil {
		return nil, err
	}
	if host != "" {
		known, err := ad.Cluster.Known(ctx)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(known, host) {
			return nil, &RefusedError{Field: "host", Msg: fmt.Sprintf("host %q has never joined the cluster (hosts: %s)", host, orNone(strings.Join(known, ", ")))}
		}
	}
	at := time.Now().UTC()
	return ad.Cluster.Update(ctx, func(a *cluster.Assignment) error { return a.SetWorkers(op, host, n, by, at) })
}

// workers fills in st the worker counts of a's record, with the live
// hosts that run them and those that do not yet, from the hosts' reports.
func workers(st *schema.ClusterStatus, a *cluster.Assignment, reports map[string]cluster.Running, live []string) {
	for i := range st.Hosts {
		if r, ok := reports[st.Hosts[i].ID]; ok {
			st.Hosts[i].Workers = r.Workers
		}
	}
	w := a.Workers
	if w == nil {
		return
	}
	cw := &schema.ClusterWorkers{Epoch: w.Epoch, Operators: []schema.ClusterOperatorWorkers{}, Scaled: []string{},
		Pending: cluster.WorkersPending(a, reports, live)}
	if cw.Pending == nil {
		cw.Pending = []string{}
	}
	for _, op := range slices.Sorted(maps.Keys(w.Operators)) {
		ow := w.Operators[op]
		cw.Operators = append(cw.Operators, schema.ClusterOperatorWorkers{Operator: op, Count: ow.Count, Hosts: ow.Hosts,
			Epoch: ow.Epoch, By: ow.By, At: ow.At})
	}
	for _, h := range live {
		if !slices.Contains(cw.Pending, h) {
			cw.Scaled = append(cw.Scaled, h)
		}
	}
	st.Workers = cw
}
