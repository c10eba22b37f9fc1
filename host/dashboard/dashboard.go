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
//   - The charts use uPlot (about 50 KB minified: canvas, fast on
//     appending series, no dependencies) and the graph's layout dagre
//     (about 50 KB with graphlib: the layered layout a pipeline's DAG
//     wants, no renderer to carry); both are MIT licensed, kept up, and
//     copied as published into static/vendor by scripts/build-dashboard.sh
//     from the versions pinned in web/package-lock.json.
package dashboard

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
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

// Mount returns a handler that serves the dashboard's page at "/" and its
// files under "/assets/", and hands every other request to api.
func Mount(api http.Handler, o Options) (http.Handler, error) {
	if o.Started.IsZero() {
		o.Started = time.Now()
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	page, err := template.ParseFS(static, "index.html")
	if err != nil {
		return nil, err
	}
	var index bytes.Buffer
	if err := page.Execute(&index, struct{ Version, Started string }{o.Version, o.Started.UTC().Format(time.RFC3339)}); err != nil {
		return nil, err
	}
	assets := http.StripPrefix("/assets/", http.FileServerFS(static))
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", csp)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(index.Bytes())
	})
	mux.Handle("GET /assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Files only: no listing, and not the page's template.
		if p := r.URL.Path; strings.HasSuffix(p, "/") || p == "/assets/index.html" {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		assets.ServeHTTP(w, r)
	}))
	return mux, nil
}
