package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
)

// deadline bounds every wait for something the server must do.
const deadline = 10 * time.Second

// recordingControl keeps the modules swaps hand over and can make a swap
// wait.
type recordingControl struct {
	mu      sync.Mutex
	modules [][]byte
	wait    time.Duration // each Swap waits this long, unless its context ends
}

func (c *recordingControl) Plugins(context.Context) (schema.Plugins, error) {
	return schema.Plugins{Modules: []schema.Module{{Name: "upper"}}}, nil
}

func (c *recordingControl) Swap(ctx context.Context, _, _ string, module []byte) (schema.SwapResult, error) {
	if c.wait > 0 {
		select {
		case <-time.After(c.wait):
		case <-ctx.Done():
			return schema.SwapResult{}, fmt.Errorf("the request's context ended while the swap waited: %w", ctx.Err())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.modules = append(c.modules, module)
	return schema.SwapResult{To: schema.Module{Size: len(module)}}, nil
}

func (c *recordingControl) Prepare(_ context.Context, _, _ string, module []byte) (schema.PrepareResult, error) {
	return schema.PrepareResult{Module: schema.Module{Size: len(module)}}, nil
}

func (c *recordingControl) Rollback(context.Context, string) (schema.SwapResult, error) {
	return schema.SwapResult{Operator: "back"}, nil
}

func (c *recordingControl) SetWorkers(_ context.Context, op string, n int) (schema.Workers, error) {
	return schema.Workers{Operator: op, To: n}, nil
}

func (c *recordingControl) swaps() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.modules
}

// countingListener counts the bytes the server reads from its connections.
type countingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.read}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

// serve starts h on a loopback port within lim, counting what it reads.
func serve(t *testing.T, h http.Handler, lim Limits) (*Server, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := Serve(cl, h, lim, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("closing the server: %v", err)
		}
	})
	return srv, cl
}

// dial opens a raw connection to srv whose reads give up after deadline.
func dial(t *testing.T, srv *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(deadline))
	return c, bufio.NewReader(c)
}

// readAnswer reads one response from r and its whole body.
func readAnswer(t *testing.T, r *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return resp, string(b)
}

// closedByServer says whether the server closed c (rather than it staying
// open until deadline).
func closedByServer(c net.Conn, r *bufio.Reader) error {
	c.SetReadDeadline(time.Now().Add(deadline))
	_, err := r.ReadByte()
	switch {
	case err == nil:
		return errors.New("the server sent more bytes")
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("still open after %v", deadline)
	}
	var op *net.OpError
	if errors.As(err, &op) { // reset by the server
		return nil
	}
	return err
}

func controlHandler(c Control, o Options) http.Handler {
	o.Registry, o.Status, o.Control = prometheus.NewRegistry(), func() schema.Status { return schema.Status{} }, c
	if o.Decisions == nil {
		o.Decisions = func(string, int) (schema.Decisions, error) { return schema.Decisions{}, nil }
	}
	return NewHandler(o)
}

func TestIdleConnectionIsClosed(t *testing.T) {
	srv, _ := serve(t, controlHandler(&recordingControl{}, Options{}), Limits{IdleTimeout: 50 * time.Millisecond})
	c, r := dial(t, srv)
	fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: sluice\r\n\r\n")
	if resp, body := readAnswer(t, r); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("/healthz: %d %q close=%v, want 200 on a kept-alive connection", resp.StatusCode, body, resp.Close)
	}
	if err := closedByServer(c, r); err != nil {
		t.Errorf("an idle keep-alive connection past http.idle_timeout: %v", err)
	}
}

func TestUnauthorizedPostIsAnsweredUnread(t *testing.T) {
	for name, head := range map[string]string{
		"content-length": "Content-Length: 100000\r\n\r\n0123456789",
		"chunked":        "Transfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			ctl := &recordingControl{}
			srv, _ := serve(t, controlHandler(ctl, Options{Token: "tok"}), Limits{})
			c, r := dial(t, srv)
			// A client that trickles its body: the headers and ten bytes,
			// then nothing. The answer must not wait for the rest.
			fmt.Fprint(c, "POST /api/v1/operators/up/swap HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer wrong\r\n"+head)
			resp, body := readAnswer(t, r)
			if resp.StatusCode != 401 || !strings.Contains(body, "token") {
				t.Errorf("answer %d %q, want 401 asking for the token", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Errorf("the 401 keeps the connection open: the server would read the rest of the body")
			}
			if err := closedByServer(c, r); err != nil {
				t.Errorf("after the 401: %v", err)
			}
			if n := len(ctl.swaps()); n != 0 {
				t.Errorf("%d swaps reached the host without the token", n)
			}
		})
	}
}

func TestConnectionsPastTheCapWait(t *testing.T) {
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /block", func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv, _ := serve(t, mux, Limits{MaxConnections: 2})
	defer close(release)

	var holders []net.Conn
	for range 2 {
		c, _ := dial(t, srv)
		fmt.Fprint(c, "GET /block HTTP/1.1\r\nHost: sluice\r\n\r\n")
		holders = append(holders, c)
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(deadline):
			t.Fatal("the first two connections were not served")
		}
	}
	third, r := dial(t, srv)
	fmt.Fprint(third, "GET /healthz HTTP/1.1\r\nHost: sluice\r\n\r\n")
	// Not answered while two connections are open. (A short wait: a
	// server without the cap answers in far less.)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := r.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection past http.max_connections 2 was served (%v)", err)
	}
	// One closes: the third is served.
	holders[0].Close()
	third.SetReadDeadline(time.Now().Add(deadline))
	if resp, body := readAnswer(t, r); resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("the third connection once one closed: %d %q", resp.StatusCode, body)
	}
}

// writeBody writes n bytes of body to c as the request's framing wants
// (chunked or not), until n are written or a write fails, and returns how
// many it wrote.
func writeBody(c net.Conn, n int64, chunked bool) int64 {
	buf := bytes.Repeat([]byte{'x'}, 32<<10)
	var written int64
	for written < n {
		p := buf[:min(int64(len(buf)), n-written)]
		if chunked {
			if _, err := fmt.Fprintf(c, "%x\r\n", len(p)); err != nil {
				return written
			}
		}
		k, err := c.Write(p)
		written += int64(k)
		if err != nil {
			return written
		}
		if chunked {
			if _, err := io.WriteString(c, "\r\n"); err != nil {
				return written
			}
		}
	}
	if chunked {
		io.WriteString(c, "0\r\n\r\n")
	}
	return written
}

func TestOversizedBodyIs413AndNotRead(t *testing.T) {
	const limit, size = 1 << 20, 64 << 20
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			ctl := &recordingControl{}
			srv, ln := serve(t, controlHandler(ctl, Options{Token: "tok", MaxBodyBytes: limit, UploadDir: t.TempDir()}), Limits{})
			c, r := dial(t, srv)
			framing := fmt.Sprintf("Content-Length: %d", size)
			if chunked {
				framing = "Transfer-Encoding: chunked"
			}
			fmt.Fprintf(c, "POST /api/v1/operators/up/swap HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer tok\r\n%s\r\n\r\n", framing)
			sent := make(chan int64, 1)
			go func() { sent <- writeBody(c, size, chunked) }()
			resp, body := readAnswer(t, r)
			c.Close() // stops the writer if the server left it blocked
			n := <-sent
			if resp.StatusCode != 413 || !strings.Contains(body, "max_body_bytes") {
				t.Errorf("a %d-byte body past a %d-byte cap: %d %q, want 413", size, limit, resp.StatusCode, body)
			}
			// The server read at most the cap, the headers and what its
			// own buffers take in besides, not the body.
			if got := ln.read.Load(); got > limit+512<<10 {
				t.Errorf("the server read %d bytes of a %d-byte body past a %d-byte cap", got, size, limit)
			}
			if n >= size {
				t.Errorf("the client sent all %d bytes", n)
			}
			if len(ctl.swaps()) != 0 {
				t.Errorf("an oversized module reached the host")
			}
		})
	}
}

func TestOversizedBodyIsNotHeldInMemory(t *testing.T) {
	const limit, size = 16 << 20, 64 << 20
	ctl := &recordingControl{}
	srv, _ := serve(t, controlHandler(ctl, Options{Token: "tok", MaxBodyBytes: limit, UploadDir: t.TempDir()}), Limits{})
	c, r := dial(t, srv)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fmt.Fprint(c, "POST /api/v1/operators/up/swap HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer tok\r\nTransfer-Encoding: chunked\r\n\r\n")
	sent := make(chan int64, 1)
	go func() { sent <- writeBody(c, size, true) }()
	resp, _ := readAnswer(t, r)
	c.Close()
	<-sent
	runtime.ReadMemStats(&after)
	if resp.StatusCode != 413 {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
	// The body went to a file: the process allocated far less than the
	// cap's worth of bytes while it came in.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit/2 {
		t.Errorf("%d bytes allocated while a body was read to its %d-byte cap", alloc, limit)
	}
}

func TestSwapBodyIsStreamedToAFile(t *testing.T) {
	const size = 2 << 20
	dir := t.TempDir()
	ctl := &recordingControl{}
	srv, _ := serve(t, controlHandler(ctl, Options{Token: "tok", MaxBodyBytes: 4 << 20, UploadDir: dir}), Limits{})
	c, r := dial(t, srv)
	fmt.Fprintf(c, "POST /api/v1/operators/up/swap?file=v2.wasm HTTP/1.1\r\nHost: sluice\r\nAuthorization: Bearer tok\r\nContent-Length: %d\r\n\r\n", size)
	module := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	if _, err := c.Write(module[:size/2]); err != nil {
		t.Fatal(err)
	}
	// Half the body sent: it is in a file in the upload directory.
	var found int64
	for stop := time.Now().Add(deadline); found < size/2 && time.Now().Before(stop); time.Sleep(10 * time.Millisecond) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				found = max(found, fi.Size())
			}
		}
	}
	if found < size/2 {
		t.Fatalf("half a swap's body sent, the upload directory holds a file of %d bytes, want %d", found, size/2)
	}
	if _, err := c.Write(module[size/2:]); err != nil {
		t.Fatal(err)
	}
	if resp, body := readAnswer(t, r); resp.StatusCode != 200 {
		t.Fatalf("swap: %d %q", resp.StatusCode, body)
	}
	if got := ctl.swaps(); len(got) != 1 || !bytes.Equal(got[0], module) {
		t.Errorf("the host was handed %d modules, want the one sent, whole", len(got))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the upload directory holds %d files after the swap, want none", len(ents))
	}
}

func TestSlowSwapOutlastsTheTimeouts(t *testing.T) {
	// A swap waits for the pipeline's next batch boundary: longer than the
	// read and write timeouts must not cancel it or lose its answer.
	ctl := &recordingControl{wait: 20 * 50 * time.Millisecond}
	lim := Limits{ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond}
	srv, _ := serve(t, controlHandler(ctl, Options{Token: "tok", UploadDir: t.TempDir()}), lim)
	for _, path := range []string{"/api/v1/operators/up/swap", "/api/v1/operators/up/rollback"} {
		req, _ := http.NewRequest("POST", "http://"+srv.Addr()+path, strings.NewReader("MOD"))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestAuthReads(t *testing.T) {
	h := controlHandler(&recordingControl{}, Options{Token: "tok", AuthReads: true})
	srv, _ := serve(t, h, Limits{})
	defer http.DefaultClient.CloseIdleConnections()
	get := func(path, token string) int {
		req, _ := http.NewRequest("GET", "http://"+srv.Addr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/metrics", "/api/v1/pipeline", "/api/v1/plugins", "/api/v1/operators/up/decisions"} {
		if code := get(path, ""); code != 401 {
			t.Errorf("GET %s without the token: %d, want 401 with http.auth all", path, code)
		}
		if code := get(path, "wrong"); code != 401 {
			t.Errorf("GET %s with a wrong token: %d, want 401", path, code)
		}
		if code := get(path, "tok"); code != 200 {
			t.Errorf("GET %s with the token: %d, want 200", path, code)
		}
	}
	if code := get("/healthz", ""); code != 200 {
		t.Errorf("GET /healthz without the token: %d, want 200 (it stays open)", code)
	}
}

// addrListener reports another address than the one it listens on.
type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l addrListener) Addr() net.Addr { return l.addr }

func TestWarnsOffLoopback(t *testing.T) {
	start := func(ln net.Listener) string {
		var buf bytes.Buffer
		srv := Serve(ln, http.NotFoundHandler(), Limits{}, slog.New(slog.NewTextHandler(&buf, nil)))
		if err := srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		if out := start(listen(addr)); out != "" {
			t.Errorf("listening on %s logged %q, want nothing", addr, out)
		}
	}
	for _, ip := range []string{"0.0.0.0", "::", "192.0.2.7", "2001:db8::7"} {
		a := &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080}
		out := start(addrListener{listen("127.0.0.1:0"), a})
		if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "http.auth: all") || !strings.Contains(out, a.String()) {
			t.Errorf("listening on %s logged %q, want a warning naming the address and http.auth", a, out)
		}
	}
}
