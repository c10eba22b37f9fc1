// Package api serves a running host over HTTP: /healthz for liveness,
// /metrics for Prometheus, /api/v1/... for the pipeline's status and its
// plugins, and the routes that change the running job (plugin swap and
// rollback).
//
// The server listens on 127.0.0.1 unless told otherwise: it exposes what a
// pipeline processes. Every POST route requires the host's token as
// "Authorization: Bearer TOKEN", compared in constant time; GET routes are
// open, as /metrics must be for a scraper.
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
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

// Control is what the plugin routes act on; the host implements it. Its
// errors are answered with the status their sentinel says: ErrNotFound
// 404, ErrRefused 422, ErrConflict 409, anything else 500.
type Control interface {
	// Plugins returns the registry's modules and each operator's history.
	Plugins(ctx context.Context) (any, error)
	// Swap replaces operator's plugin with module (file names it) and
	// returns once it is in place.
	Swap(ctx context.Context, operator, file string, module []byte) (any, error)
	// Rollback returns operator to its previous plugin.
	Rollback(ctx context.Context, operator string) (any, error)
}

// Errors a Control wraps to choose the answer's status.
var (
	ErrNotFound = errors.New("not found")
	ErrRefused  = errors.New("refused")
	ErrConflict = errors.New("conflict")
)

// MaxModuleBytes bounds the module a swap uploads.
const MaxModuleBytes = 256 << 20

// Options are the parts of NewHandler's API.
type Options struct {
	Registry  *prometheus.Registry
	Status    StatusFunc
	Decisions DecisionsFunc
	// Control serves the plugin routes; nil leaves them out.
	Control Control
	// Token is required by the POST routes; "" refuses every POST.
	Token string
}

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
	return NewHandler(Options{Registry: reg, Status: status, Decisions: decisions})
}

// NewHandler returns the routes of Handler and, with o.Control, these:
//
//	GET  /api/v1/plugins                          the registry and each
//	                                              operator's deployments
//	POST /api/v1/operators/{name}/swap?file=F.wasm body: the module; swaps
//	                                              it in at the next batch
//	POST /api/v1/operators/{name}/rollback        back to the previous one
func NewHandler(o Options) http.Handler {
	reg, status, decisions := o.Registry, o.Status, o.Decisions
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
	if c := o.Control; c != nil {
		mux.HandleFunc("GET /api/v1/plugins", func(w http.ResponseWriter, r *http.Request) {
			answer(w, http.StatusOK)(c.Plugins(r.Context()))
		})
		mux.Handle("POST /api/v1/operators/{name}/swap", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxModuleBytes))
			if err != nil {
				writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{fmt.Sprintf("reading the module: %v (at most %d bytes)", err, MaxModuleBytes)})
				return
			}
			file := r.URL.Query().Get("file")
			if file == "" {
				file = "module.wasm"
			}
			answer(w, http.StatusOK)(c.Swap(r.Context(), r.PathValue("name"), file, body))
		}))
		mux.Handle("POST /api/v1/operators/{name}/rollback", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
			answer(w, http.StatusOK)(c.Rollback(r.Context(), r.PathValue("name")))
		}))
	}
	return mux
}

// authorized serves h to requests that carry token as a bearer token.
func authorized(token string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{"this route needs the host's token: Authorization: Bearer TOKEN (the token is in <data-dir>/api-token)"})
			return
		}
		h(w, r)
	})
}

// answer writes v with code, or err with the status its sentinel says.
func answer(w http.ResponseWriter, code int) func(v any, err error) {
	return func(v any, err error) {
		switch {
		case err == nil:
			writeJSON(w, code, v)
		case errors.Is(err, ErrNotFound):
			writeJSON(w, http.StatusNotFound, errorBody{err.Error()})
		case errors.Is(err, ErrRefused):
			writeJSON(w, http.StatusUnprocessableEntity, errorBody{err.Error()})
		case errors.Is(err, ErrConflict):
			writeJSON(w, http.StatusConflict, errorBody{err.Error()})
		default:
			writeJSON(w, http.StatusInternalServerError, errorBody{err.Error()})
		}
	}
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
