// Package dashboard serves the host's web dashboard: a page at "/" of the
// HTTP API's address that draws the pipeline's graph with live rates,
// charts of throughput and batch latency, a transactional operator's
// outcomes, time per phase and the adaptive strategy's decisions, the
// plugin registry with swap and rollback, on a host in cluster mode the
// cluster's hosts, key groups, migration and checkpoints with a rebalance
// button, and the control plane's findings, workers' health and decisions.
//
// Decisions, and why:
//
//   - The page, its script and its libraries are embedded in the binary
//     (static/): the host works offline and nothing is fetched from
//     elsewhere at run time; the Content-Security-Policy says so to the
//     browser too.
//   - Everything the page shows comes from the API's routes and their JSON
//     (host/api/schema), the live part from GET /api/v1/events: the
//     dashboard has no data of its own and no route of its own but the
//     files, so whatever it shows a script can read the same way.
//   - The files are open to every reader, even with http.auth: all: they
//     hold no data of the pipeline. The data does need the token then,
//     which the page asks for and sends as "Authorization: Bearer", the
//     API's only form of it (no cookie, so no cross-site request can use
//     it); a browser's EventSource cannot send it, so the page reads the
//     event stream with fetch. Swap and rollback need the token always,
//     as the API's POST routes do.
//   - The page opens fast on a cold browser (the overview interactive
//     within 1 s, BENCHMARKS.md): it carries the pipeline's status as the
//     API answers GET /api/v1/pipeline to the page's own request, so that
//     it draws the graph and the totals when its script runs, not after a
//     round trip to the event stream (under http.auth: all the API refuses
//     a request without the token and the page carries nothing); its
//     scripts are deferred; and the charts' library, whose evaluation was
//     the longest step in a profile of a cold page (it sets up its number
//     and date formats), is loaded after the first drawing, when a chart
//     has no point to show yet anyway.
//   - Each file is named in the page by its content's hash and then cached
//     for good (a reopened page fetches only itself), carries an ETag, and
//     is gzipped once, when the handler is made, for browsers that take
//     it: a remote reader fetches about a third of the bytes.
//   - The charts use uPlot (about 50 KB minified: canvas, fast on
//     appending series, no dependencies) and the graph's layout dagre
//     (about 50 KB with graphlib: the layered layout a pipeline's DAG
//     wants, no renderer to carry); both are MIT licensed, kept up, and
//     copied as published into static/vendor by scripts/build-dashboard.sh
//     from the versions pinned in web/package-lock.json.
package dashboard

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed static
var files embed.FS

// Options are what the page shows of the host besides the API's answers.
type Options struct {
	// Version is the host's version.
	Version string
	// Started is when the host started; the zero time: when Mount was
	// called.
	Started time.Time
}

// csp keeps the page to its own files and the API's routes.
const csp = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"

// immutable is the caching of a file asked for by its content's hash: the
// URL names those bytes for ever.
const immutable = "public, max-age=31536000, immutable"

// asset is one embedded file as it is served.
type asset struct {
	// hash names the content: the first 16 hex digits of its SHA-256.
	hash string
	// contentType is from the name's extension.
	contentType string
	// body is the file, and gz it gzipped, nil when that is not smaller.
	body, gz []byte
}

// loadAssets reads every file under static but the page's template, and
// gzips each once.
func loadAssets(static fs.FS) (map[string]*asset, error) {
	assets := make(map[string]*asset)
	err := fs.WalkDir(static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || name == "index.html" {
			return err
		}
		body, err := fs.ReadFile(static, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{hash: hex.EncodeToString(sum[:8]), contentType: mime.TypeByExtension(path.Ext(name)), body: body}
		if a.contentType == "" {
			a.contentType = "application/octet-stream"
		}
		var gz bytes.Buffer
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if gz.Len() < len(body) {
			a.gz = gz.Bytes()
		}
		assets[name] = a
		return nil
	})
	return assets, err
}

// pageData is what the page's template is given.
type pageData struct {
	Version, Started string
	// Status is the pipeline's status as GET /api/v1/pipeline answers it,
	// nil when the reader may not read it.
	Status json.RawMessage
}

// statusPath is the API's route for the pipeline's status.
const statusPath = "/api/v1/pipeline"

// firstStatus asks api for GET /api/v1/pipeline with the page's own
// request (its headers, its address): the page carries the status it
// answers, so that the page draws it at once rather than after its first
// round trip to the event stream. It returns nil unless the API answered
// 200 with JSON: with http.auth: all, a browser's request for the page
// carries no token, so the page carries no data.
func firstStatus(api http.Handler, r *http.Request) json.RawMessage {
	req := r.Clone(r.Context())
	req.URL = &url.URL{Path: statusPath}
	req.RequestURI = statusPath
	req.Header.Del("If-None-Match")
	req.Header.Del("If-Modified-Since")
	req.Header.Del("Range")
	rec := &recorder{header: make(http.Header)}
	api.ServeHTTP(rec, req)
	if rec.code != http.StatusOK || !json.Valid(rec.body.Bytes()) {
		return nil
	}
	return rec.body.Bytes()
}

// recorder is the http.ResponseWriter firstStatus hands the API.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, e := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(e, ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
			if !ok {
				return true
			}
			w, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
			return err == nil && w > 0
		}
	}
	return false
}

// Mount returns a handler that serves the dashboard's page at "/" and its
// files under "/assets/", and hands every other request to api.
//
// The page names each file with its content's hash ("assets/app.js?v=…"),
// and a file asked for with its current hash may be cached for good: a
// browser that opened the page once fetches none of them again until the
// binary changes them. Each file is sent gzipped when the browser takes
// it, and carries an ETag, so that one asked for without the hash is
// revalidated in one round trip.
func Mount(api http.Handler, o Options) (http.Handler, error) {
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	assets, err := loadAssets(static)
	if err != nil {
		return nil, fmt.Errorf("dashboard: reading the embedded files: %w", err)
	}
	assetURL := func(name string) (string, error) {
		a, ok := assets[name]
		if !ok {
			return "", fmt.Errorf("dashboard: the page refers to %s, which is not embedded", name)
		}
		return "assets/" + name + "?v=" + a.hash, nil
	}
	page, err := template.New("index.html").Funcs(template.FuncMap{"asset": assetURL}).ParseFS(static, "index.html")
	if err != nil {
		return nil, err
	}
	started := o.Started.UTC().Format(time.RFC3339)
	// The page as it is without a status, which also checks the template
	// at once.
	if err := page.Execute(io.Discard, pageData{Version: o.Version, Started: started}); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		if err := page.Execute(&b, pageData{Version: o.Version, Started: started, Status: firstStatus(api, r)}); err != nil {
			http.Error(w, "the dashboard's page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", csp)
		// It carries the pipeline's status when the reader may read it.
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(b.Bytes())
	})
	mux.HandleFunc("GET /assets/", func(w http.ResponseWriter, r *http.Request) {
		// Files only: no listing, and not the page's template.
		a, ok := assets[strings.TrimPrefix(r.URL.Path, "/assets/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Vary", "Accept-Encoding")
		if r.URL.Query().Get("v") == a.hash {
			h.Set("Cache-Control", immutable)
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		body, tag := a.body, `"`+a.hash+`"`
		if a.gz != nil && acceptsGzip(r) {
			body, tag = a.gz, `"`+a.hash+`-gzip"`
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("ETag", tag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
	return mux, nil
}
