package natstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/natsconn"
)

// memberEnv is set in the environment of a member process: the test
// binary run again, which MainMember turns into a NATS server.
const memberEnv = "SLUICE_NATSTEST_MEMBER"

// exitPortInUse is a member process's exit status when a port it was
// given is taken.
const exitPortInUse = 3

// memberSpec is what a member process is told to be.
type memberSpec struct {
	Name       string   `json:"name"`
	Dir        string   `json:"dir"`
	ClientPort int      `json:"client_port"`
	RoutePort  int      `json:"route_port"`
	StatusPort int      `json:"status_port"`
	Routes     []string `json:"routes"`
}

// memberStatus is a member process's answer on its status port: what
// Cluster.status reads from an in-process member's server.
type memberStatus struct {
	Leader  bool     `json:"leader"`
	Current bool     `json:"current"`
	Peers   []string `json:"peers"`
}

// MainMember makes this process a cluster member when
// StartClusterProcesses started it, and then does not return: it serves
// until killed, or shuts the server down and exits when its standard
// input closes (Stop, or the test process gone). In any other process it
// returns at once. Call it first thing in TestMain of a package whose
// tests use StartClusterProcesses.
func MainMember() {
	spec := os.Getenv(memberEnv)
	if spec == "" {
		return
	}
	os.Exit(serveMember(spec))
}

// serveMember runs a member process and returns its exit status.
func serveMember(spec string) int {
	var s memberSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintf(os.Stderr, "natstest: member process: %s: %v\n", memberEnv, err)
		return 2
	}
	m := &member{name: s.Name, dir: s.Dir, clientPort: s.ClientPort, routePort: s.RoutePort}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	srv, err := natsconn.StartEmbedded(ctx, m.options(s.Routes))
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "natstest: member process %s: %v\n", s.Name, err)
		if errors.Is(err, natsconn.ErrPortInUse) {
			return exitPortInUse
		}
		return 1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.StatusPort)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "natstest: member process %s: status port: %v\n", s.Name, err)
		return exitPortInUse
	}
	m.srv = srv
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st, _ := m.status()
		_ = json.NewEncoder(w).Encode(st)
	})}
	go func() { _ = hs.Serve(ln) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = hs.Close()
	ctx, cancel = context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "natstest: member process %s: %v\n", s.Name, err)
		return 1
	}
	return 0
}

// process is a member running as a process of its own.
type process struct {
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	statusPort int
	done       chan struct{} // closed when cmd.Wait returned
	out        *syncBuffer   // its standard output and error
}

// syncBuffer is a bytes.Buffer safe for the writes of a process's output
// copiers and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartClusterProcesses starts n (at least 2) NATS servers clustered with
// JetStream as StartCluster does, each in a process of its own (the test
// binary run again: its TestMain must call MainMember first), so that a
// test can kill one with SIGKILL (Kill) and start it again (Restart).
// Server returns nil for such members.
func StartClusterProcesses(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 2 {
		t.Fatalf("natstest: a cluster of %d servers: want at least 2 (JetStream elects a leader among 2 or more)", n)
	}
	c := &Cluster{t: t, procs: true}
	for i := range n {
		c.members = append(c.members, &member{name: fmt.Sprintf("%s-%d", ClusterName, i), dir: t.TempDir()})
	}
	t.Cleanup(c.shutdownAll)
	for try := 1; ; try++ {
		for _, m := range c.members {
			m.clientPort, m.routePort = freePort(t), freePort(t)
		}
		err := c.startProcesses()
		if err == nil {
			break
		}
		c.shutdownAll()
		if !errors.Is(err, natsconn.ErrPortInUse) || try == 5 {
			t.Fatal(err)
		}
	}
	c.WaitReady()
	return c
}

// startProcesses starts every member, each routed to all of them.
func (c *Cluster) startProcesses() error {
	routes := c.routes()
	for _, m := range c.members {
		if err := c.startProcess(m, routes); err != nil {
			return err
		}
	}
	return nil
}

// routes returns every member's route URL.
func (c *Cluster) routes() []string {
	routes := make([]string, len(c.members))
	for j, o := range c.members {
		routes[j] = routeURL(o.routePort)
	}
	return routes
}

// startProcess starts m's process with routes, on m's ports and a new
// status port, and waits until its status port answers.
func (c *Cluster) startProcess(m *member, routes []string) error {
	c.t.Helper()
	statusPort := freePort(c.t)
	spec, err := json.Marshal(memberSpec{Name: m.name, Dir: m.dir, ClientPort: m.clientPort, RoutePort: m.routePort,
		StatusPort: statusPort, Routes: routes})
	if err != nil {
		return err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(spec))
	p := &process{cmd: cmd, statusPort: statusPort, done: make(chan struct{}), out: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return fmt.Errorf("natstest: cluster member %s: %w", m.name, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natstest: cluster member %s: %w", m.name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	m.proc = p
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := p.status(); err == nil {
			return nil
		}
		select {
		case <-p.done:
			m.proc = nil
			err := fmt.Errorf("natstest: cluster member %s exited at start (%s): %s", m.name, cmd.ProcessState, p.out)
			if cmd.ProcessState.ExitCode() == exitPortInUse {
				err = fmt.Errorf("%w: %w", natsconn.ErrPortInUse, err)
			}
			return err
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natstest: cluster member %s not serving after %s: %s", m.name, waitLimit, p.out)
		}
	}
}

// status asks the member process for its JetStream state.
func (p *process) status() (memberStatus, error) {
	var st memberStatus
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.statusPort)))
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// Kill kills member i's process with SIGKILL, as a crash would stop it:
// nothing is flushed or closed. The member must run as a process
// (StartClusterProcesses). Restart starts it again.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	m := c.member(i)
	if !c.procs {
		c.t.Fatalf("natstest: cluster member %s runs in the test's process: only StartClusterProcesses' members can be killed", m.name)
	}
	if m.proc == nil {
		c.t.Fatalf("natstest: cluster member %s is already stopped", m.name)
	}
	p := m.proc
	m.proc = nil
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("natstest: cluster member %s: %v", m.name, err)
	}
	<-p.done
	_ = p.stdin.Close()
}

// stopProcess stops m's process cleanly: its server shuts down when its
// standard input closes. One that does not exit within waitLimit is
// killed, and the test fails.
func (c *Cluster) stopProcess(m *member) {
	p := m.proc
	m.proc = nil
	_ = p.stdin.Close()
	select {
	case <-p.done:
		if !p.cmd.ProcessState.Success() {
			c.t.Errorf("natstest: cluster member %s: %s: %s", m.name, p.cmd.ProcessState, p.out)
		}
	case <-time.After(waitLimit):
		_ = p.cmd.Process.Kill()
		<-p.done
		c.t.Errorf("natstest: cluster member %s did not stop within %s: %s", m.name, waitLimit, p.out)
	}
}
