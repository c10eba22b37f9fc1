package dashboard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/host/dashboard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMount: the page at /, its files under /assets/ (no listing, not the
// page's template), and every other path handed to the API.
func TestMount(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api "+r.URL.Path) })
	h, err := dashboard.Mount(api, dashboard.Options{Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string, http.Header) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String(), rec.Header()
	}
	code, body, hdr := get("/")
	if code != 200 || !strings.Contains(body, `content="v9.9.9"`) || !strings.Contains(body, "assets/app.js") {
		t.Errorf("/: %d %.200q", code, body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("/: Content-Security-Policy %q, want the page kept to its own files", csp)
	}
	for _, path := range []string{"/assets/app.js", "/assets/app.css", "/assets/vendor/uPlot.iife.min.js", "/assets/vendor/dagre.min.js"} {
		if code, body, _ := get(path); code != 200 || len(body) == 0 {
			t.Errorf("%s: %d, %d bytes", path, code, len(body))
		}
	}
	for _, path := range []string{"/assets/", "/assets/vendor/", "/assets/index.html"} {
		if code, _, _ := get(path); code != 404 {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	for _, path := range []string{"/api/v1/pipeline", "/metrics", "/healthz"} {
		if code, body, _ := get(path); code != 200 || body != "api "+path {
			t.Errorf("%s: %d %q, want the API's answer", path, code, body)
		}
	}
	// Nothing is fetched from elsewhere.
	for _, path := range []string{"/", "/assets/app.js"} {
		_, body, _ := get(path)
		body = strings.ReplaceAll(body, `"http://www.w3.org/2000/svg"`, "") // a namespace, not a fetch
		for _, ref := range []string{"http://", "https://", "//cdn"} {
			if strings.Contains(body, ref) {
				t.Errorf("%s refers to %s", path, ref)
			}
		}
	}
}
