package runner

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/clusterctl"
)

// clusterAPI returns what serves the HTTP API's cluster routes: the
// host's view of its pipeline's cluster, or nil when the host runs the
// whole pipeline itself (the routes then say so).
func (h *Host) clusterAPI() (api.Cluster, error) {
	ch := h.cluster
	if ch == nil {
		return nil, nil
	}
	js, err := jetstream.New(h.nc)
	if err != nil {
		return nil, err
	}
	return clusterctl.API{Host: ch.id, Admin: &clusterctl.Admin{Pipeline: h.p.Name, JS: js, Cluster: ch.c, Operators: h.p.Operators}}, nil
}
