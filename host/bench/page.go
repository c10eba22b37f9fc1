package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/exec"
)

// pageMode says what a pipeline round of the nats suite serves.
type pageMode int

const (
	pageNone   pageMode = iota // no HTTP server (the suite without NATSConfig.Dashboard)
	pageClosed                 // the event stream served, nobody reading
	pageOpen                   // served and read as the dashboard's page reads it
)

// pageServer serves job's status and event stream (GET /api/v1/events) on
// a 127.0.0.1 listener, as `sluice run` does.
func pageServer(e *env, job *exec.Job) (*api.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: dashboard: %w", err)
	}
	h := api.NewHandler(api.Options{
		Registry: prometheus.NewRegistry(),
		Status:   func() schema.Status { return job.Status() },
		Updated:  func() <-chan struct{} { return job.Updated() },
	})
	return api.Serve(ln, h, api.Limits{}, e.log), nil
}

// pageReader reads a job's event stream as the dashboard's page does: each
// event's data decoded as a schema.Status.
type pageReader struct {
	events atomic.Int64
	first  chan struct{} // closed when the first event is decoded
	done   chan error    // the reader's end: nil when its context ended it
}

// openPage starts reading GET /api/v1/events at addr until ctx is done.
func openPage(ctx context.Context, addr string) *pageReader {
	p := &pageReader{first: make(chan struct{}), done: make(chan error, 1)}
	go func() { p.done <- p.read(ctx, addr) }()
	return p
}

func (p *pageReader) read(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/v1/events: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	data := []byte("data: ")
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, data) {
			continue
		}
		var st schema.Status
		if err := json.Unmarshal(line[len(data):], &st); err != nil {
			return fmt.Errorf("GET /api/v1/events: an event's data: %w", err)
		}
		if p.events.Add(1) == 1 {
			close(p.first)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("GET /api/v1/events: %w", err)
	}
	return errors.New("GET /api/v1/events: the stream ended")
}

// attached waits for the first event, so that a round starts with the
// page attached.
func (p *pageReader) attached(ctx context.Context) error {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-p.first:
		return nil
	case err := <-p.done:
		p.done <- err
		if err == nil {
			err = errors.New("it ended before the first event")
		}
		return fmt.Errorf("bench: dashboard reader: %w", err)
	case <-t.C:
		return errors.New("bench: dashboard reader: no event in 10s")
	case <-ctx.Done():
		return fmt.Errorf("bench: %w", ctx.Err())
	}
}
