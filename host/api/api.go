// Package api serves a running host over HTTP: /healthz for liveness,
// /metrics for Prometheus, /api/v1/... for the pipeline's status, its
// committed state, its plugins and its control plane, and the routes that change the running
// job (plugin swap and rollback, a control round).
//
// The server listens on 127.0.0.1 unless told otherwise: it exposes what a
// pipeline processes, and it logs a warning when it listens on any other
// address. Every POST route requires the host's token as
// "Authorization: Bearer TOKEN", compared in constant time, before it reads
// a byte of the body; GET routes are open, as /metrics must be for a
// scraper, unless Options.AuthReads asks for the token there too (/healthz
// stays open).
//
// Clients hold little: Limits bound the connections open at once and the
// time a request may take to arrive, an answer to leave and a keep-alive
// connection to idle, and a request's body (a swapped-in module) is
// streamed to a file, at most Options.MaxBodyBytes of it, and read into
// memory only when the swap's turn comes, one swap at a time.
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
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/host/api/schema"
)

// StatusFunc returns what /api/v1/pipeline reports.
type StatusFunc func() schema.Status

// DecisionsFunc returns what /api/v1/operators/{name}/decisions reports:
// up to n (all kept when n is 0) of the latest batches of a transactional
// operator under the adaptive strategy, with the decision taken after
// each. An error (no such operator, not adaptive) is answered 404 with
// its message.
type DecisionsFunc func(operator string, n int) (schema.Decisions, error)

// TPGFunc returns what /api/v1/operators/{name}/tpg reports: it asks for
// a sample of a transactional operator's next batch and returns the last
// one taken (ok false before any). An error (no such operator, not
// transactional) is answered 404 with its message.
type TPGFunc func(operator string) (tpg schema.TPG, ok bool, err error)

// Control is what the plugin routes act on; the host implements it. Its
// errors are answered with the status their sentinel says: ErrNotFound
// 404, ErrRefused 422, ErrConflict 409, anything else 500.
type Control interface {
	// Plugins returns the registry's modules and each operator's history.
	Plugins(ctx context.Context) (schema.Plugins, error)
	// Swap replaces operator's plugin with module (file names it) and
	// returns once it is in place.
	Swap(ctx context.Context, operator, file string, module []byte) (schema.SwapResult, error)
	// Prepare stores, checks, compiles and loads module (file names it)
	// for operator without swapping it in, so that its swap only makes
	// its instances and installs them.
	Prepare(ctx context.Context, operator, file string, module []byte) (schema.PrepareResult, error)
	// Rollback returns operator to its previous plugin.
	Rollback(ctx context.Context, operator string) (schema.SwapResult, error)
	// SetWorkers changes the number of operator's workers and returns
	// once the change is made.
	SetWorkers(ctx context.Context, operator string, workers int) (schema.Workers, error)
}

// Cluster is what the cluster routes act on: the pipeline's cluster as
// this host sees it (package clusterctl implements it). Its errors are
// answered as Control's are: ErrNotFound 404, ErrRefused 422, ErrConflict
// 409 (a migration in progress), anything else 500.
type Cluster interface {
	// Status returns the cluster's state, with this host's id.
	Status(ctx context.Context) (schema.ClusterStatus, error)
	// Move starts a migration that gives key groups to a live host.
	Move(ctx context.Context, req schema.ClusterMoveRequest) (schema.ClusterStart, error)
	// Place starts a migration that gives every key group of the stage
	// that runs an operator to a live host, and keeps them there.
	Place(ctx context.Context, req schema.ClusterPlaceRequest) (schema.ClusterStart, error)
	// Rebalance starts a migration that spreads the key groups evenly
	// over the live hosts.
	Rebalance(ctx context.Context, req schema.ClusterRebalanceRequest) (schema.ClusterStart, error)
	// Scale records that operator runs workers workers on every host
	// (host "") or on host alone; the hosts apply it at their next batch
	// boundary once they see it.
	Scale(ctx context.Context, operator string, workers int, host string) (schema.ClusterScale, error)
	// ChangeHost takes pool host id into service (activate) or gives
	// active host id back to the pool; the coordinator then moves the
	// key groups.
	ChangeHost(ctx context.Context, id string, activate bool) (schema.ClusterHostChange, error)
}

// Errors a Control wraps to choose the answer's status.
var (
	ErrNotFound = errors.New("not found")
	ErrRefused  = errors.New("refused")
	ErrConflict = errors.New("conflict")
)

// DefaultMaxBodyBytes bounds a request's body (the module a swap uploads)
// when Options.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 64 << 20

// Options are the parts of NewHandler's API.
type Options struct {
	Registry  *prometheus.Registry
	Status    StatusFunc
	Decisions DecisionsFunc
	// TPG serves GET /api/v1/operators/{name}/tpg; nil leaves it out.
	TPG TPGFunc
	// Updated serves GET /api/v1/events, the status as server-sent
	// events; nil leaves it out.
	Updated UpdatedFunc
	// Control serves the plugin routes; nil leaves them out.
	Control Control
	// State serves GET /api/v1/state; nil leaves it out.
	State StateReader
	// Cluster serves the cluster routes; nil (a host that runs the whole
	// pipeline itself) answers them 404, saying so.
	Cluster Cluster
	// ControlPlane serves GET /api/v1/control: the control plane's
	// policies, workers' health, decisions and findings. Nil (a pipeline
	// without a control: section) answers {"enabled": false, ...}, so a
	// client can tell the control plane is off.
	ControlPlane func() schema.Control
	// ControlRound serves POST /api/v1/control/round: it runs a
	// management round now, reason recorded as its trigger, and returns
	// the decision applied in it, nil when it decided nothing. Its errors
	// are answered as Control's are. Nil answers the route 404, saying
	// the control plane is off.
	ControlRound func(ctx context.Context, reason string) (*schema.Decision, error)
	// Token is required by the POST routes; "" refuses every POST.
	Token string
	// AuthReads makes the GET routes require Token too, all but /healthz.
	AuthReads bool
	// MaxBodyBytes bounds a request's body; 0: DefaultMaxBodyBytes. A
	// body that declares more is answered 413 unread; one that turns out
	// longer is answered 413 once MaxBodyBytes of it have been read.
	MaxBodyBytes int64
	// UploadDir holds the bodies of swaps while they arrive and wait their
	// turn, one file each, removed once answered; "": os.TempDir().
	UploadDir string
}

// Limits bound what the server's clients may hold. The zero value bounds
// only the time a request's headers may take (10s).
type Limits struct {
	// MaxConnections caps the connections open at once: past it, a new
	// connection waits to be accepted until another closes. 0: no cap.
	MaxConnections int
	// ReadTimeout bounds the time a whole request, body included, may take
	// to arrive. 0: none.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time an answer may take to leave, counted
	// from the end of the request's headers, and for the routes that wait
	// for the pipeline (swap, rollback) again from when the answer is
	// ready. 0: none.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has waited this long
	// for its next request. 0: ReadTimeout.
	IdleTimeout time.Duration
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

// NewHandler returns the routes of Handler; with o.Updated this one:
//
//	GET  /api/v1/events                           the status as server-sent
//	                                              events, after each batch
//	                                              (at most 4 a second)
//
// with o.State this one:
//
//	GET  /api/v1/state?table=T&prefix=P&key_group=N&limit=L&after=C
//	                                              a page of committed state
//	                                              (StatePage)
//
// and with o.Control these:
//
//	GET  /api/v1/plugins                          the registry and each
//	                                              operator's deployments
//	POST /api/v1/operators/{name}/swap?file=F.wasm body: the module; swaps
//	                                              it in at the next batch
//	POST /api/v1/operators/{name}/prepare?file=F.wasm body: the module;
//	                                              checks, compiles and loads
//	                                              it for a later swap
//	POST /api/v1/operators/{name}/rollback        back to the previous one
//
// and these, the second of which without o.ControlRound answers 404:
//
//	GET  /api/v1/control                          the control plane's
//	                                              workers, decisions and
//	                                              findings ({"enabled":
//	                                              false} when it is off)
//	POST /api/v1/control/round                    body: reason; runs a
//	                                              round, answers its
//	                                              decision (204: none)
//
// and these, which without o.Cluster answer 404:
//
//	GET  /api/v1/cluster                          the cluster's hosts, key
//	                                              groups and migration
//	POST /api/v1/cluster/move                     body: groups, to, knobs;
//	                                              starts a migration
//	POST /api/v1/cluster/place                    body: operator, to, knobs;
//	                                              places the operator's stage
//	POST /api/v1/cluster/rebalance                body: knobs; starts one
//	POST /api/v1/cluster/operators/{name}/workers?workers=N[&host=ID]
//	                                              records the operator's
//	                                              worker count for every
//	                                              host (or one)
//	POST /api/v1/cluster/hosts/{id}/activate      takes a pool host into
//	                                              service
//	POST /api/v1/cluster/hosts/{id}/release       gives a host back to
//	                                              the pool
//
// docs/api.md documents every route and the JSON of its answer, one type
// of package schema each; Client reads them.
func NewHandler(o Options) http.Handler {
	h, _ := newMux(o)
	return h
}

// newMux returns NewHandler's routes and their patterns, in the order
// they are registered (docs/api.md documents each).
func newMux(o Options) (http.Handler, []string) {
	reg, status, decisions := o.Registry, o.Status, o.Decisions
	maxBody := o.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	// read guards a GET route: open, or behind the token with AuthReads.
	read := func(h http.HandlerFunc) http.Handler {
		if o.AuthReads {
			return authorized(o.Token, h)
		}
		return h
	}
	mux := &patternMux{ServeMux: http.NewServeMux()}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", read(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}).ServeHTTP))
	mux.Handle("GET /api/v1/pipeline", read(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, status())
	}))
	mux.Handle("GET /api/v1/operators/{name}/decisions", read(func(w http.ResponseWriter, r *http.Request) {
		n := 0
		if v := r.URL.Query().Get("last"); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 {
				writeJSON(w, http.StatusBadRequest, schema.Error{Error: fmt.Sprintf("last=%q: want a whole number at least 0", v)})
				return
			}
			n = x
		}
		recs, err := decisions(r.PathValue("name"), n)
		if err != nil {
			writeJSON(w, http.StatusNotFound, schema.Error{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, recs)
	}))
	if o.TPG != nil {
		mux.Handle("GET /api/v1/operators/{name}/tpg", read(func(w http.ResponseWriter, r *http.Request) {
			tpg, ok, err := o.TPG(r.PathValue("name"))
			switch {
			case err != nil:
				writeJSON(w, http.StatusNotFound, schema.Error{Error: err.Error()})
			case !ok:
				writeJSON(w, http.StatusAccepted, schema.Error{Error: "no batch sampled yet: the next batch under a TPG strategy will be; ask again"})
			default:
				writeJSON(w, http.StatusOK, tpg)
			}
		}))
	}
	if o.Updated != nil {
		mux.Handle("GET /api/v1/events", read(serveEvents(status, o.Updated)))
	}
	if o.State != nil {
		mux.Handle("GET /api/v1/state", read(serveState(o.State)))
	}
	if c := o.Control; c != nil {
		// turn admits one swap or prepare at a time to read its module into memory
		// and hand it over; the others wait on disk.
		turn := make(chan struct{}, 1)
		mux.Handle("GET /api/v1/plugins", read(func(w http.ResponseWriter, r *http.Request) {
			v, err := c.Plugins(r.Context())
			answer(w, v, err)
		}))
		// withModule serves a route whose body is a module: it is
		// received on disk, read into memory on its turn, and given to
		// serve with the operator and the file name (?file=, else
		// "module.wasm").
		withModule := func(serve func(w http.ResponseWriter, r *http.Request, operator, file string, module []byte)) http.Handler {
			return authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
				f, err := receive(w, r, o.UploadDir, maxBody)
				if err != nil {
					return // answered
				}
				defer func() {
					f.Close()
					os.Remove(f.Name())
				}()
				select {
				case turn <- struct{}{}:
					defer func() { <-turn }()
				case <-r.Context().Done():
					return // the client left
				}
				module, err := readFile(f)
				if err != nil {
					writeJSON(w, http.StatusInternalServerError, schema.Error{Error: fmt.Sprintf("reading the module back: %v", err)})
					return
				}
				file := r.URL.Query().Get("file")
				if file == "" {
					file = "module.wasm"
				}
				serve(w, r, r.PathValue("name"), file, module)
			})
		}
		mux.Handle("POST /api/v1/operators/{name}/swap", withModule(func(w http.ResponseWriter, r *http.Request, operator, file string, module []byte) {
			v, err := c.Swap(r.Context(), operator, file, module)
			answerAfterWait(w, r, v, err)
		}))
		mux.Handle("POST /api/v1/operators/{name}/prepare", withModule(func(w http.ResponseWriter, r *http.Request, operator, file string, module []byte) {
			v, err := c.Prepare(r.Context(), operator, file, module)
			answerAfterWait(w, r, v, err)
		}))
		mux.Handle("POST /api/v1/operators/{name}/rollback", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
			v, err := c.Rollback(r.Context(), r.PathValue("name"))
			answerAfterWait(w, r, v, err)
		}))
		mux.Handle("POST /api/v1/operators/{name}/workers", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
			n, err := strconv.Atoi(r.URL.Query().Get("workers"))
			if err != nil || n < 1 {
				writeJSON(w, http.StatusBadRequest, schema.Error{Error: fmt.Sprintf("workers=%q: want a whole number of at least 1", r.URL.Query().Get("workers"))})
				return
			}
			v, err := c.SetWorkers(r.Context(), r.PathValue("name"), n)
			answerAfterWait(w, r, v, err)
		}))
	}
	serveCluster(mux, o, read)
	serveControlPlane(mux, o, read)
	return mux.ServeMux, mux.patterns
}

// noControl is the answer of POST /api/v1/control/round on a host whose
// pipeline runs no control plane.
const noControl = "the control plane is off: the pipeline has no control: section, or it sets enabled: false (docs/control.md)"

// serveControlPlane registers the control plane's routes.
func serveControlPlane(mux *patternMux, o Options, read func(http.HandlerFunc) http.Handler) {
	mux.Handle("GET /api/v1/control", read(func(w http.ResponseWriter, _ *http.Request) {
		v := schema.Control{Policies: []string{}, Decisions: []schema.Decision{}, Findings: []schema.Finding{}}
		if o.ControlPlane != nil {
			v = o.ControlPlane()
			// Lists, never null, for the page and scripts that read it.
			v.Policies = nonNil(v.Policies)
			v.Decisions = nonNil(v.Decisions)
			v.Findings = nonNil(v.Findings)
		}
		writeJSON(w, http.StatusOK, v)
	}))
	mux.Handle("POST /api/v1/control/round", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
		var req schema.ControlRoundRequest
		missing := ""
		if o.ControlRound == nil {
			missing = noControl
		}
		if !decodeBody(w, r, &req, missing) {
			return
		}
		d, err := o.ControlRound(r.Context(), req.Reason)
		if err == nil && d == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		answer(w, d, err)
	}))
}

// maxClusterBody bounds the body of a cluster route: a list of key groups
// and the planner's knobs.
const maxClusterBody = 1 << 20

// noCluster is the answer of a cluster route on a host that does not run
// in cluster mode.
const noCluster = "this host does not run in cluster mode: its pipeline has no cluster section, so it has no hosts, key groups to move or migrations (docs/cluster.md)"

// serveCluster registers the cluster routes.
func serveCluster(mux *patternMux, o Options, read func(http.HandlerFunc) http.Handler) {
	c := o.Cluster
	mux.Handle("GET /api/v1/cluster", read(func(w http.ResponseWriter, r *http.Request) {
		if c == nil {
			writeJSON(w, http.StatusNotFound, schema.Error{Error: noCluster})
			return
		}
		v, err := c.Status(r.Context())
		answer(w, v, err)
	}))
	mux.Handle("POST /api/v1/cluster/move", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
		var req schema.ClusterMoveRequest
		if !decodeBody(w, r, &req, noClusterIf(c == nil)) {
			return
		}
		v, err := c.Move(r.Context(), req)
		answer(w, v, err)
	}))
	mux.Handle("POST /api/v1/cluster/place", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
		var req schema.ClusterPlaceRequest
		if !decodeBody(w, r, &req, noClusterIf(c == nil)) {
			return
		}
		v, err := c.Place(r.Context(), req)
		answer(w, v, err)
	}))
	mux.Handle("POST /api/v1/cluster/rebalance", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
		var req schema.ClusterRebalanceRequest
		if !decodeBody(w, r, &req, noClusterIf(c == nil)) {
			return
		}
		v, err := c.Rebalance(r.Context(), req)
		answer(w, v, err)
	}))
	mux.Handle("POST /api/v1/cluster/operators/{name}/workers", authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
		if c == nil {
			writeJSON(w, http.StatusNotFound, schema.Error{Error: noCluster})
			return
		}
		q := r.URL.Query()
		n, err := strconv.Atoi(q.Get("workers"))
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, schema.Error{Error: fmt.Sprintf("operator %q: workers=%q: want a whole number of at least 1", r.PathValue("name"), q.Get("workers"))})
			return
		}
		v, err := c.Scale(r.Context(), r.PathValue("name"), n, q.Get("host"))
		answer(w, v, err)
	}))
	for _, action := range []string{"activate", "release"} {
		mux.Handle("POST /api/v1/cluster/hosts/{id}/"+action, authorized(o.Token, func(w http.ResponseWriter, r *http.Request) {
			if c == nil {
				writeJSON(w, http.StatusNotFound, schema.Error{Error: noCluster})
				return
			}
			v, err := c.ChangeHost(r.Context(), r.PathValue("id"), action == "activate")
			answer(w, v, err)
		}))
	}
}

// nonNil returns s, or an empty slice for nil.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// noClusterIf is noCluster when none is true, else "".
func noClusterIf(none bool) string {
	if none {
		return noCluster
	}
	return ""
}

// decodeBody reads r's JSON body into v, which keeps its zero value when
// the body is empty, and reports whether it did; otherwise it has
// answered: 404 with missing when it is not "" (the host has no cluster,
// no control plane), 400 for a body that is not v's JSON (naming what is
// wrong), 413 for one past maxClusterBody.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, missing string) bool {
	if missing != "" {
		dropBody(w)
		writeJSON(w, http.StatusNotFound, schema.Error{Error: missing})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxClusterBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return true
	case errors.As(err, &mbe):
		dropBody(w)
		writeJSON(w, http.StatusRequestEntityTooLarge, schema.Error{Error: fmt.Sprintf("the body is longer than %d bytes", maxClusterBody)})
	default:
		writeJSON(w, http.StatusBadRequest, schema.Error{Error: fmt.Sprintf("the body is not a %s: %v", bodyName(v), err)})
	}
	return false
}

// bodyName names the JSON document v decodes, for an error.
func bodyName(v any) string {
	switch v.(type) {
	case *schema.ClusterMoveRequest:
		return `move request ({"groups": [3, 5], "to": "HOST", "knobs": {...}})`
	case *schema.ClusterRebalanceRequest:
		return `rebalance request ({"knobs": {...}}, or nothing)`
	case *schema.ControlRoundRequest:
		return `round request ({"reason": "..."}, or nothing)`
	}
	return fmt.Sprintf("%T", v)
}

// patternMux is a ServeMux that lists the patterns it was given.
type patternMux struct {
	*http.ServeMux
	patterns []string
}

// Handle registers h for pattern.
func (m *patternMux) Handle(pattern string, h http.Handler) {
	m.ServeMux.Handle(pattern, h)
	m.patterns = append(m.patterns, pattern)
}

// HandleFunc registers h for pattern.
func (m *patternMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// receive streams r's body to a new file in dir, at most limit bytes of it,
// and returns the file. On an error it has answered the request: 413 when
// the body is longer than limit (reading stops there), 400 when it did not
// arrive whole, 500 when the file could not be written.
func receive(w http.ResponseWriter, r *http.Request, dir string, limit int64) (*os.File, error) {
	tooLarge := func() error {
		rearmWrite(w, r)
		dropBody(w)
		writeJSON(w, http.StatusRequestEntityTooLarge, schema.Error{Error: fmt.Sprintf("the body is longer than the host takes (http.max_body_bytes: %d bytes)", limit)})
		return &http.MaxBytesError{Limit: limit}
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	f, err := os.CreateTemp(dir, "upload-*")
	if err != nil {
		dropBody(w)
		writeJSON(w, http.StatusInternalServerError, schema.Error{Error: fmt.Sprintf("storing the body: %v", err)})
		return nil, err
	}
	fail := func(code int, msg string, err error) (*os.File, error) {
		f.Close()
		os.Remove(f.Name())
		rearmWrite(w, r)
		dropBody(w)
		writeJSON(w, code, schema.Error{Error: fmt.Sprintf("%s: %v", msg, err)})
		return nil, err
	}
	body := &bodyReader{r: http.MaxBytesReader(w, r.Body, limit)}
	if _, err := io.Copy(f, body); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			f.Close()
			os.Remove(f.Name())
			return nil, tooLarge()
		case body.err != nil:
			return fail(http.StatusBadRequest, "reading the body", err)
		default:
			return fail(http.StatusInternalServerError, "storing the body", err)
		}
	}
	return f, nil
}

// dropBody makes the server close the connection after the answer without
// reading what is left of the request's body: left to itself it would
// read (and wait for) up to 256 KiB of it first.
func dropBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// bodyReader remembers the error reading the body returned, to tell it
// from one writing the file.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// readFile reads f, which receive wrote, from its start.
func readFile(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// answerAfterWait is answer for a route that waited for its body or for
// the pipeline: its answer has the server's whole WriteTimeout again.
func answerAfterWait[T schema.SwapResult | schema.PrepareResult | schema.Workers](w http.ResponseWriter, r *http.Request, v T, err error) {
	rearmWrite(w, r)
	answer(w, v, err)
}

// rearmWrite gives the answer to r the server's whole WriteTimeout from
// now, as the time it took to arrive or to be served is not the answer's.
func rearmWrite(w http.ResponseWriter, r *http.Request) {
	if s, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && s.WriteTimeout > 0 {
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	}
}

// authorized serves h to requests that carry token as a bearer token.
func authorized(token string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			if r.ContentLength != 0 {
				dropBody(w)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			writeJSON(w, http.StatusUnauthorized, schema.Error{Error: "this route needs the host's token: Authorization: Bearer TOKEN (the token is in <data-dir>/api-token)"})
			return
		}
		h(w, r)
	})
}

// answer writes v with 200, or err with the status its sentinel says.
func answer[T any](w http.ResponseWriter, v T, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.Is(err, ErrNotFound):
		writeJSON(w, http.StatusNotFound, schema.Error{Error: err.Error()})
	case errors.Is(err, ErrRefused):
		writeJSON(w, http.StatusUnprocessableEntity, schema.Error{Error: err.Error()})
	case errors.Is(err, ErrConflict):
		writeJSON(w, http.StatusConflict, schema.Error{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, schema.Error{Error: err.Error()})
	}
}

// writeJSON answers with v as indented JSON.
func writeJSON[T any](w http.ResponseWriter, code int, v T) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// Listen starts serving h on addr ("127.0.0.1:8080"; port 0 picks a free
// one) within lim.
func Listen(addr string, h http.Handler, lim Limits, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("api: listen on %s: %w (set http.addr in the pipeline or --http to another address, or off)", addr, err)
	}
	return Serve(ln, h, lim, log), nil
}

// Serve starts serving h on ln within lim; the Server closes ln. It logs a
// warning when ln's address is not a loopback one: whoever reaches it can
// read what the open routes answer, and the token crosses the network in
// clear text.
func Serve(ln net.Listener, h http.Handler, lim Limits, log *slog.Logger) *Server {
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		log.Warn("the http api listens on an address other hosts may reach: whoever reaches it can read the routes the token does not guard (with http.auth: all it guards all but /healthz), and the token travels in clear text (put TLS in front, or listen on 127.0.0.1)",
			"addr", ln.Addr().String())
	}
	if lim.MaxConnections > 0 {
		ln = &limitListener{Listener: ln, slots: make(chan struct{}, lim.MaxConnections), done: make(chan struct{})}
	}
	header := 10 * time.Second
	if lim.ReadTimeout > 0 && lim.ReadTimeout < header {
		header = lim.ReadTimeout
	}
	s := &Server{srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: header,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
	}, ln: ln, log: log}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to the context's deadline for
// requests in flight.
func (s *Server) Close(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}

// limitListener accepts a connection only while fewer than cap(slots) it
// accepted are open.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn frees its slot when it is closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot, once.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite shuts the sending side, which the server does before it
// closes a connection whose request it did not read whole.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
