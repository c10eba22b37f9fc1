package pipeline

import (
	"strings"
	"testing"
	"time"
)

const clusterBase = `name: orders
nats: {url: "nats://127.0.0.1:4222"}
sources:
  - {name: in, type: jetstream, stream: ORDERS, subject: orders}
operators:
  - {name: count, plugin: p.wasm, kind: keyed}
sinks:
  - {name: out, type: stdout}
`

func TestClusterDefaults(t *testing.T) {
	p, err := Parse("p.yaml", t.TempDir(), []byte(clusterBase+"cluster: {host: h1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Cluster
	if c.Host != "h1" || time.Duration(c.Lease) != DefaultClusterLease || time.Duration(c.CheckpointEvery) != DefaultCheckpointEvery ||
		c.Stream != "SLUICE_ORDERS_IN" || c.Replicas != 1 || time.Duration(c.Duplicates) != DefaultClusterDuplicates {
		t.Errorf("defaults %+v", *c)
	}
	if p, err := Parse("p.yaml", t.TempDir(), []byte(clusterBase)); err != nil || p.Cluster != nil {
		t.Errorf("without a cluster section: %v, %+v", err, p.Cluster)
	}
	if p.Whole() {
		t.Error("a keyed pipeline keeps its key groups together")
	}
	// A transactional operator runs on one host: the groups stay together.
	txn := strings.Replace(clusterBase, "kind: keyed}", "kind: transactional, tables: [{name: t}]}", 1) + "cluster: {}\n"
	if p, err := Parse("p.yaml", t.TempDir(), []byte(txn)); err != nil || !p.Whole() {
		t.Errorf("a transactional pipeline spread over hosts: %v, whole %v", err, err == nil && p.Whole())
	}
}

func TestClusterRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"host id":     {clusterBase + "cluster: {host: 'a b'}\n", `p.yaml:9: cluster.host: "a b" is not a valid host id`},
		"short lease": {clusterBase + "cluster: {lease: 100ms}\n", "cluster.lease: lease 100ms: want at least 1s"},
		"replicas":    {clusterBase + "cluster: {replicas: 7}\n", "cluster.replicas: 7 replicas: want 1 to 5"},
		"duplicates":  {clusterBase + "cluster: {duplicates: 20s}\n", "cluster.duplicates: duplicates 20s is shorter than checkpoint_every plus lease (40s)"},
		"file source": {strings.Replace(clusterBase, "{name: in, type: jetstream, stream: ORDERS, subject: orders}", "{name: in, type: file, path: x}", 1) + "cluster: {}\n",
			"sources[0].type: a pipeline spread over hosts reads a jetstream or generator source"},
		"two sources": {strings.Replace(clusterBase, "sources:\n", "sources:\n  - {name: more, type: generator}\n", 1) + "cluster: {}\n",
			"a pipeline spread over hosts reads one source (this one has 2)"},
	} {
		_, err := Parse("p.yaml", t.TempDir(), []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}
