// Package api serves a running host over HTTP: /healthz for liveness,
// /metrics for Prometheus, and /api/v1/... for the pipeline's status.
//
// The server listens on 127.0.0.1 unless told otherwise: it exposes what a
// pipeline processes, and later endpoints will change the running job.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// StatusFunc returns what /api/v1/pipeline reports, encoded as JSON.
type StatusFunc func() any

// DecisionsFunc returns what /api/v1/operators/{name}/decisions reports:
// up to n (all kept when n is 0) of the latest batches of a transactional
// operator under the adaptive strategy, with the decision taken after
// each. An error (no such operator, not adaptive) is answered 404 with
// its message.
type DecisionsFunc func(operator string, n int) (any, error)

// Server is the host's HTTP server.
type Server struct {
	srv *http.Server
	ln  net.Listener
	log *slog.Logger
}

// Handler returns the routes of the API:
//
//	GET /healthz                                 "ok"
//	GET /metrics                                 Prometheus metrics
//	GET /api/v1/pipeline                         the job's status (status)
//	GET /api/v1/operators/{name}/decisions?last=N the adaptive strategy's
//	                                              latest batches (decisions)
func Handler(reg *prometheus.Registry, status StatusFunc, decisions DecisionsFunc) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /api/v1/pipeline", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, status())
	})
	mux.HandleFunc("GET /api/v1/operators/{name}/decisions", func(w http.ResponseWriter, r *http.Request) {
		n := 0
		if v := r.URL.Query().Get("last"); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 {
				writeJSON(w, http.StatusBadRequest, errorBody{fmt.Sprintf("last=%q: want a whole number at least 0", v)})
				return
			}
			n = x
		}
		recs, err := decisions(r.PathValue("name"), n)
		if err != nil {
			writeJSON(w, http.StatusNotFound, errorBody{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, recs)
	})
	return mux
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON answers with v as indented JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// Listen starts serving h on addr ("127.0.0.1:8080"; port 0 picks a free one).
func Listen(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api: listen on %s: %w (set http.addr in the pipeline or --http to another address, or off)", addr, err)
	}
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln: ln, log: log}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to the context's deadline for
// requests in flight.
func (s *Server) Close(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}
