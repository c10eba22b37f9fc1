package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/state"
)

// Client calls a running host's API and decodes each answer into the
// schema type the server encodes it from, so that the two cannot drift.
// Its zero value is not usable: Addr is required.
type Client struct {
	// Addr is the host's API address: host:port, or a URL with a scheme
	// ("http://host:port").
	Addr string
	// Token is sent as the bearer token when not "".
	Token string
	// HTTP sends the requests; nil: http.DefaultClient.
	HTTP *http.Client

	// strict refuses an answer with a field its type lacks (tests).
	strict bool
}

// StatusError is an answer other than 200 OK and 204 No Content. It matches ErrNotFound,
// ErrRefused and ErrConflict as the server chose its status from them.
type StatusError struct {
	// Code and Status are the answer's HTTP status ("404 Not Found").
	Code   int
	Status string
	// Message is the answer's error, else its body.
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the host answered %s: %s", e.Status, e.Message)
}

// Is reports whether the status is the one the server answers target
// with.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == http.StatusNotFound
	case ErrRefused:
		return e.Code == http.StatusUnprocessableEntity
	case ErrConflict:
		return e.Code == http.StatusConflict
	}
	return false
}

// Status returns the job's status (GET /api/v1/pipeline).
func (c *Client) Status(ctx context.Context) (schema.Status, error) {
	var v schema.Status
	return v, c.do(ctx, http.MethodGet, "/api/v1/pipeline", nil, &v)
}

// Decisions returns up to last (0: all kept) of the latest batches of an
// adaptive transactional operator (GET /api/v1/operators/{name}/decisions).
func (c *Client) Decisions(ctx context.Context, operator string, last int) (schema.Decisions, error) {
	var v schema.Decisions
	path := "/api/v1/operators/" + url.PathEscape(operator) + "/decisions"
	if last > 0 {
		path += "?last=" + strconv.Itoa(last)
	}
	return v, c.do(ctx, http.MethodGet, path, nil, &v)
}

// Plugins returns the registry's modules and each operator's history
// (GET /api/v1/plugins).
func (c *Client) Plugins(ctx context.Context) (schema.Plugins, error) {
	var v schema.Plugins
	return v, c.do(ctx, http.MethodGet, "/api/v1/plugins", nil, &v)
}

// Swap sends module (file names it) to replace operator's plugin and
// returns once it is in place (POST /api/v1/operators/{name}/swap).
func (c *Client) Swap(ctx context.Context, operator, file string, module []byte) (schema.SwapResult, error) {
	var v schema.SwapResult
	path := "/api/v1/operators/" + url.PathEscape(operator) + "/swap?file=" + url.QueryEscape(file)
	return v, c.do(ctx, http.MethodPost, path, module, &v)
}

// Prepare sends module (file names it) to be stored, checked, compiled
// and loaded for operator without swapping it in, so that a later Swap of
// the same bytes only makes its instances and installs them (POST
// /api/v1/operators/{name}/prepare).
func (c *Client) Prepare(ctx context.Context, operator, file string, module []byte) (schema.PrepareResult, error) {
	var v schema.PrepareResult
	path := "/api/v1/operators/" + url.PathEscape(operator) + "/prepare?file=" + url.QueryEscape(file)
	return v, c.do(ctx, http.MethodPost, path, module, &v)
}

// Rollback returns operator to its previous plugin
// (POST /api/v1/operators/{name}/rollback).
func (c *Client) Rollback(ctx context.Context, operator string) (schema.SwapResult, error) {
	var v schema.SwapResult
	return v, c.do(ctx, http.MethodPost, "/api/v1/operators/"+url.PathEscape(operator)+"/rollback", nil, &v)
}

// SetWorkers changes operator's number of workers and returns once the
// change is made (POST /api/v1/operators/{name}/workers).
func (c *Client) SetWorkers(ctx context.Context, operator string, workers int) (schema.Workers, error) {
	var v schema.Workers
	path := "/api/v1/operators/" + url.PathEscape(operator) + "/workers?workers=" + strconv.Itoa(workers)
	return v, c.do(ctx, http.MethodPost, path, nil, &v)
}

// Cluster returns the state of the cluster the host runs in (GET
// /api/v1/cluster); a host that does not run in cluster mode answers
// ErrNotFound.
func (c *Client) Cluster(ctx context.Context) (schema.ClusterStatus, error) {
	var v schema.ClusterStatus
	return v, c.do(ctx, http.MethodGet, "/api/v1/cluster", nil, &v)
}

// ClusterMove starts a migration that gives key groups to a live host
// (POST /api/v1/cluster/move). It is refused (ErrRefused) for a host that
// is not live, a group out of range or one no live host owns, and
// (ErrConflict) while another migration is in progress.
func (c *Client) ClusterMove(ctx context.Context, req schema.ClusterMoveRequest) (schema.ClusterStart, error) {
	var v schema.ClusterStart
	return v, c.doJSON(ctx, "/api/v1/cluster/move", req, &v)
}

// ClusterPlace starts a migration that gives every key group of the stage
// that runs req.Operator to the live host req.To and keeps them there
// (POST /api/v1/cluster/place), refused as ClusterMove is, and for an
// operator the host's pipeline (or stage) does not run.
func (c *Client) ClusterPlace(ctx context.Context, req schema.ClusterPlaceRequest) (schema.ClusterStart, error) {
	var v schema.ClusterStart
	return v, c.doJSON(ctx, "/api/v1/cluster/place", req, &v)
}

// ClusterRebalance starts a migration that spreads the key groups evenly
// over the live hosts (POST /api/v1/cluster/rebalance), refused as
// ClusterMove is.
func (c *Client) ClusterRebalance(ctx context.Context, req schema.ClusterRebalanceRequest) (schema.ClusterStart, error) {
	var v schema.ClusterStart
	return v, c.doJSON(ctx, "/api/v1/cluster/rebalance", req, &v)
}

// ClusterScale records that operator runs workers workers on every host
// of the cluster, or on host alone when host is not "" (POST
// /api/v1/cluster/operators/{name}/workers). It is refused (ErrRefused)
// for an operator the pipeline does not have or whose workers cannot
// change, a count out of range and a host that has never joined. The
// hosts apply it at their next batch boundary: Cluster shows when they
// have.
func (c *Client) ClusterScale(ctx context.Context, operator string, workers int, host string) (schema.ClusterScale, error) {
	var v schema.ClusterScale
	q := url.Values{"workers": {strconv.Itoa(workers)}}
	if host != "" {
		q.Set("host", host)
	}
	return v, c.do(ctx, http.MethodPost, "/api/v1/cluster/operators/"+url.PathEscape(operator)+"/workers?"+q.Encode(), nil, &v)
}

// ClusterActivate takes pool host id into service (POST
// /api/v1/cluster/hosts/{id}/activate).
func (c *Client) ClusterActivate(ctx context.Context, id string) (schema.ClusterHostChange, error) {
	var v schema.ClusterHostChange
	return v, c.do(ctx, http.MethodPost, "/api/v1/cluster/hosts/"+url.PathEscape(id)+"/activate", nil, &v)
}

// ClusterRelease gives active host id back to the pool (POST
// /api/v1/cluster/hosts/{id}/release).
func (c *Client) ClusterRelease(ctx context.Context, id string) (schema.ClusterHostChange, error) {
	var v schema.ClusterHostChange
	return v, c.do(ctx, http.MethodPost, "/api/v1/cluster/hosts/"+url.PathEscape(id)+"/release", nil, &v)
}

// Control returns the control plane's policies, its view of each worker
// at the last round, its decisions and the job doctor's findings (GET
// /api/v1/control); Enabled is false when the pipeline runs no control
// plane.
func (c *Client) Control(ctx context.Context) (schema.Control, error) {
	var v schema.Control
	return v, c.do(ctx, http.MethodGet, "/api/v1/control", nil, &v)
}

// ControlRound runs a management round now, reason recorded as its
// trigger, and returns the decision applied in it, nil when it decided
// nothing (POST /api/v1/control/round). A host whose pipeline runs no
// control plane answers ErrNotFound.
func (c *Client) ControlRound(ctx context.Context, reason string) (*schema.Decision, error) {
	var v *schema.Decision
	return v, c.doJSON(ctx, "/api/v1/control/round", schema.ControlRoundRequest{Reason: reason}, &v)
}

// doJSON posts body as JSON to path and decodes the answer into out.
func (c *Client) doJSON(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("api: POST %s: %w", path, err)
	}
	return c.send(ctx, http.MethodPost, path, b, "application/json", out)
}

// State returns one page of committed state (GET /api/v1/state): q's
// table, prefix, key group (when at least 0), limit (when above 0) and
// after.
func (c *Client) State(ctx context.Context, q state.Query) (StatePage, error) {
	v := url.Values{}
	if q.Table != "" {
		v.Set("table", q.Table)
	}
	if len(q.Prefix) > 0 {
		v.Set("prefix", string(q.Prefix))
	}
	if q.KeyGroup >= 0 {
		v.Set("key_group", strconv.Itoa(q.KeyGroup))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	var p StatePage
	return p, c.do(ctx, http.MethodGet, "/api/v1/state?"+v.Encode(), nil, &p)
}

// do sends a request and decodes a 200 answer into out, which a 204
// leaves as it is; any other answer is a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.send(ctx, method, path, body, "application/wasm", out)
}

// send is do with the body's content type.
func (c *Client) send(ctx context.Context, method, path string, body []byte, contentType string, out any) error {
	base := c.Addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reaching the host at %s: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the host's answer: %w", err)
	}
	if resp.StatusCode == http.StatusNoContent {
		return nil // out keeps its zero value
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Code: resp.StatusCode, Status: resp.Status, Message: strings.TrimSpace(string(b))}
		var e schema.Error
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			se.Message = e.Error
		}
		return se
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if c.strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("the host at %s answered %s %s with what is not a %T: %w", c.Addr, method, path, out, err)
	}
	return nil
}
