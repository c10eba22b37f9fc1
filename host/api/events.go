package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// UpdatedFunc returns a channel closed the next time the status changes
// (exec.Job.Updated).
type UpdatedFunc func() <-chan struct{}

// Timing of GET /api/v1/events.
const (
	// EventsMinInterval is the least time between two events of one
	// stream: the batches committed meanwhile make one event.
	EventsMinInterval = 250 * time.Millisecond
	// EventsMaxInterval is the most: with no batch committed, the status
	// is sent again, so that a reader's charts advance while the job idles.
	EventsMaxInterval = time.Second
)

// serveEvents streams the status as server-sent events: one at once, then
// one after each change, at most one per EventsMinInterval and at least
// one per EventsMaxInterval, until the client leaves. Nothing runs for the
// stream between events but this handler's wait.
func serveEvents(status StatusFunc, updated UpdatedFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		ctx := r.Context()
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			// Subscribe before reading, so that no change falls between.
			changed := updated()
			if err := writeEvent(w, r, rc, status()); err != nil {
				return // the client left
			}
			sent := time.Now()
			timer.Reset(EventsMaxInterval)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
				continue
			case <-changed:
			}
			if !sleep(ctx, time.Until(sent.Add(EventsMinInterval))) {
				return
			}
		}
	}
}

// sleep waits d or until ctx is done, and says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// writeEvent sends st as one "status" event and flushes it, each write
// with the server's whole WriteTimeout: a stream lasts longer than any
// one answer may.
func writeEvent(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, st schema.Status) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	rearmWrite(w, r)
	buf := make([]byte, 0, len(b)+32)
	buf = append(buf, "event: status\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return rc.Flush()
}
