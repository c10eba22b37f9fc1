// Package natstest starts embedded NATS servers with JetStream for tests:
// one server, or a cluster of them on 127.0.0.1, each stored in a
// directory of its own under t.TempDir() and shut down when the test
// ends. The servers log nothing.
//
// # Ports
//
// Every server picks its client port itself (-1), and so does every
// cluster member's route listener but the first: JetStream clustered
// needs each member to be given a route when it starts, and the first has
// no other member yet, so it is given its own route, on a port picked by
// listening on port 0 and closing. Another process can take that port in
// the moment between; the server then fails to listen with ErrPortInUse
// and StartCluster picks another port and starts it again. The members
// after it are given the routes of the members before, and learn of the
// later ones from them. Restart starts a member on the ports it had, so
// that clients and the other members find it again.
//
// # Members as processes
//
// StartClusterProcesses runs each member in a process of its own, the
// test binary started again with the member's settings in its
// environment (TestMain calls MainMember, which serves them), so that
// Kill can stop one with SIGKILL, as a crash would: nothing flushed,
// no connection closed. Such members are given every port up front
// (picked as the first member's route port is, and picked again for all
// of them when one is taken) and all the routes; each answers its
// JetStream state on a status port of its own, which WaitReady reads.
// A member process also exits when its standard input closes, so none
// outlives the test binary.
package natstest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/natsconn"
)

// ClusterName is the name of the clusters StartCluster starts.
const ClusterName = "sluice-test"

// waitLimit bounds every wait of this package: generous, since a busy
// machine is slow to elect leaders, and a hang still fails the test.
const waitLimit = 90 * time.Second

// quiet is the servers' logger.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// StartServer starts a single embedded NATS server with JetStream on a
// free port of 127.0.0.1, stored under t.TempDir(), and shuts it down when
// the test ends.
func StartServer(t testing.TB) *natsconn.Embedded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	e, err := natsconn.StartEmbedded(ctx, natsconn.Options{Dir: t.TempDir(), Port: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, e) })
	return e
}

// Cluster is a cluster of embedded NATS servers, its members, started by
// StartCluster. Its methods call t.Fatal, so call them from the test's
// goroutine.
type Cluster struct {
	t       testing.TB
	members []*member
	procs   bool // the members run as processes (StartClusterProcesses)
}

// member is one server of a cluster, running or stopped.
type member struct {
	name       string
	dir        string
	clientPort int
	routePort  int
	srv        *natsconn.Embedded // nil while stopped, or run as a process
	proc       *process           // a member run as a process; nil while stopped
}

// running says whether m's server runs, in this process or its own.
func (m *member) running() bool { return m.srv != nil || m.proc != nil }

// StartCluster starts n (at least 2) embedded NATS servers on 127.0.0.1
// clustered with JetStream, named ClusterName-0 to ClusterName-(n-1),
// waits until JetStream has a meta leader and every member is current,
// and shuts the servers down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 2 {
		t.Fatalf("natstest: a cluster of %d servers: want at least 2 (JetStream elects a leader among 2 or more)", n)
	}
	c := &Cluster{t: t}
	for i := range n {
		c.members = append(c.members, &member{name: fmt.Sprintf("%s-%d", ClusterName, i), dir: t.TempDir(), clientPort: -1, routePort: -1})
	}
	// After the directories', so that it runs before their removal.
	t.Cleanup(c.shutdownAll)
	for i, m := range c.members {
		var routes []string
		for _, o := range c.members[:i] {
			routes = append(routes, o.srv.RouteURL())
		}
		if i > 0 {
			if err := c.start(m, routes); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// The first member routes to itself, on a port picked here.
		for try := 1; ; try++ {
			m.routePort = freePort(t)
			err := c.start(m, []string{routeURL(m.routePort)})
			if err == nil {
				break
			}
			if !errors.Is(err, natsconn.ErrPortInUse) || try == 5 {
				t.Fatal(err)
			}
		}
	}
	c.WaitReady()
	return c
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func routeURL(port int) string {
	return "nats-route://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// options returns the options that start m with routes.
func (m *member) options(routes []string) natsconn.Options {
	return natsconn.Options{
		Dir:    m.dir,
		Name:   m.name,
		Port:   m.clientPort,
		Logger: quiet(),
		Cluster: &natsconn.ClusterOptions{
			Name:   ClusterName,
			Port:   m.routePort,
			Routes: routes,
		},
	}
}

// learnPorts records the ports m's server listens on, to start it again
// on them.
func (m *member) learnPorts(t testing.TB) {
	t.Helper()
	for _, s := range []string{m.srv.ClientURL(), m.srv.RouteURL()} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("natstest: cluster member %s: %v", m.name, err)
		}
		port, err := strconv.Atoi(u.Port())
		if err != nil {
			t.Fatalf("natstest: cluster member %s: URL %q: %v", m.name, s, err)
		}
		if u.Scheme == "nats-route" {
			m.routePort = port
		} else {
			m.clientPort = port
		}
	}
}

// start starts m with routes and records its ports.
func (c *Cluster) start(m *member, routes []string) error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	srv, err := natsconn.StartEmbedded(ctx, m.options(routes))
	if err != nil {
		return fmt.Errorf("natstest: cluster member %s: %w", m.name, err)
	}
	m.srv = srv
	m.learnPorts(c.t)
	return nil
}

// Len returns the number of members, running or stopped.
func (c *Cluster) Len() int { return len(c.members) }

// URLs returns the client URLs of every member, running or stopped,
// comma-separated, as nats.Connect and natsconn.Connect take them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.members))
	for i, m := range c.members {
		urls[i] = "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort))
	}
	return strings.Join(urls, ",")
}

// Server returns member i's server, or nil while it is stopped or when
// it runs as a process of its own.
func (c *Cluster) Server(i int) *natsconn.Embedded { return c.member(i).srv }

// Name returns member i's server name.
func (c *Cluster) Name(i int) string { return c.member(i).name }

// Index returns the index of the member named name (as JetStream reports
// a stream's leader), or -1.
func (c *Cluster) Index(name string) int {
	return slices.IndexFunc(c.members, func(m *member) bool { return m.name == name })
}

func (c *Cluster) member(i int) *member {
	c.t.Helper()
	if i < 0 || i >= len(c.members) {
		c.t.Fatalf("natstest: no cluster member %d in a cluster of %d", i, len(c.members))
	}
	return c.members[i]
}

// Stop shuts member i down without leaving the cluster: to the others it
// is a member that went away, and JetStream keeps it among the peers of
// its streams. It does not wait for new leaders; WaitReady does.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	m := c.member(i)
	if !m.running() {
		c.t.Fatalf("natstest: cluster member %s is already stopped", m.name)
	}
	if c.procs {
		c.stopProcess(m)
		return
	}
	srv := m.srv
	m.srv = nil
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		c.t.Fatalf("natstest: cluster member %s: %v", m.name, err)
	}
}

// Restart starts the stopped member i again on its directory and ports,
// routed to every member, and waits as StartCluster does.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	m := c.member(i)
	if m.running() {
		c.t.Fatalf("natstest: cluster member %s is running", m.name)
	}
	start := c.start
	if c.procs {
		start = c.startProcess
	}
	if err := start(m, c.routes()); err != nil {
		c.t.Fatal(err)
	}
	c.WaitReady()
}

// WaitReady waits until the running members have a JetStream meta leader,
// every one of them is current with it, and the leader counts every one
// of them among its peers (so that a stream can be placed on them all).
func (c *Cluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		status, ready := c.status()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: cluster not ready after %s: %s", waitLimit, status)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// status describes the members' JetStream state and says whether the
// cluster is ready.
func (c *Cluster) status() (string, bool) {
	var desc []string
	var leader *member
	ready := true
	running := 0
	var peers []string
	for _, m := range c.members {
		if !m.running() {
			desc = append(desc, m.name+" stopped")
			continue
		}
		st, err := m.status()
		switch {
		case err != nil:
			desc = append(desc, fmt.Sprintf("%s not answering (%v)", m.name, err))
			ready = false
		case st.Leader:
			leader, peers = m, st.Peers
			desc = append(desc, m.name+" leader")
		case st.Current:
			desc = append(desc, m.name+" current")
		default:
			desc = append(desc, m.name+" not current")
			ready = false
		}
		running++
	}
	if leader == nil {
		return strings.Join(desc, ", ") + "; no meta leader", false
	}
	for _, m := range c.members {
		if m.running() && m != leader && !slices.Contains(peers, m.name) {
			ready = false
		}
	}
	return fmt.Sprintf("%s; the leader's peers: %v", strings.Join(desc, ", "), peers), ready && running > 0
}

// status returns the JetStream state of a running member.
func (m *member) status() (memberStatus, error) {
	if m.proc != nil {
		return m.proc.status()
	}
	js := m.srv.Server()
	st := memberStatus{Leader: js.JetStreamIsLeader(), Current: js.JetStreamIsCurrent()}
	if st.Leader {
		st.Peers = js.JetStreamClusterPeers()
	}
	return st, nil
}

// shutdownAll shuts down the running members.
func (c *Cluster) shutdownAll() {
	for _, m := range c.members {
		if m.proc != nil {
			c.stopProcess(m)
		}
		if m.srv != nil {
			shutdown(c.t, m.srv)
			m.srv = nil
		}
	}
}

// shutdown shuts e down, bounded so that a hang fails the test.
func shutdown(t testing.TB, e *natsconn.Embedded) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Error(err)
	}
}
