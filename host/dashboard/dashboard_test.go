package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// get asks h for path with the given header lines ("Name: value").
func get(t *testing.T, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for _, line := range header {
		k, v, _ := strings.Cut(line, ": ")
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestAssetsCaching: the page names each file with its content's hash; a
// file asked for with that hash may be cached for good, without it it is
// revalidated by its ETag; each is gzipped for a browser that takes it.
func TestAssetsCaching(t *testing.T) {
	h, err := dashboard.Mount(http.NotFoundHandler(), dashboard.Options{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	page := get(t, h, "/").Body.String()
	refs := regexp.MustCompile(`"(assets/[^"?]+)\?v=([0-9a-f]{16})"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 4 {
		t.Fatalf("the page names %d files with their hash, want at least 4 (styles, scripts, the charts' library):\n%s", len(refs), page)
	}
	for _, ref := range refs {
		file, hash := "/"+ref[1], ref[2]
		plain := get(t, h, file)
		if plain.Code != 200 || plain.Header().Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d, encoding %q", file, plain.Code, plain.Header().Get("Content-Encoding"))
		}
		if cc := plain.Header().Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("%s without its hash: Cache-Control %q, want no-cache", file, cc)
		}
		tag := plain.Header().Get("ETag")
		if !strings.Contains(tag, hash) {
			t.Errorf("%s: ETag %q, want its hash %s", file, tag, hash)
		}
		if rec := get(t, h, file, "If-None-Match: "+tag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("%s with If-None-Match %s: %d, %d bytes; want 304 and no body", file, tag, rec.Code, rec.Body.Len())
		}
		hashed := get(t, h, file+"?v="+hash, "Accept-Encoding: gzip, deflate, br")
		if cc := hashed.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") || !strings.Contains(cc, "max-age=31536000") {
			t.Errorf("%s?v=%s: Cache-Control %q, want it cached for good", file, hash, cc)
		}
		if v := hashed.Header().Get("Vary"); v != "Accept-Encoding" {
			t.Errorf("%s: Vary %q, want Accept-Encoding", file, v)
		}
		if get(t, h, file+"?v=0000000000000000").Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("%s with another hash: cached for good", file)
		}
		if hashed.Header().Get("Content-Type") != plain.Header().Get("Content-Type") || plain.Header().Get("Content-Type") == "" {
			t.Errorf("%s: Content-Type %q gzipped, %q plain", file, hashed.Header().Get("Content-Type"), plain.Header().Get("Content-Type"))
		}
		if hashed.Header().Get("Content-Encoding") != "gzip" {
			if plain.Body.Len() > 4096 {
				t.Errorf("%s (%d bytes) not gzipped for a browser that takes gzip", file, plain.Body.Len())
			}
			continue
		}
		if hashed.Header().Get("ETag") == tag {
			t.Errorf("%s: the same ETag %s gzipped and plain", file, tag)
		}
		zr, err := gzip.NewReader(hashed.Body)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !bytes.Equal(body, plain.Body.Bytes()) {
			t.Errorf("%s: gunzipped %d bytes, plain %d: not the same file", file, len(body), plain.Body.Len())
		}
		if q0 := get(t, h, file, "Accept-Encoding: gzip;q=0"); q0.Header().Get("Content-Encoding") != "" {
			t.Errorf("%s: gzipped for a browser that refuses gzip (q=0)", file)
		}
	}
}

// TestPageCarriesStatus: the page carries the status GET /api/v1/pipeline
// answers to the page's own request, and nothing when the API refuses it
// (http.auth: all without a token).
func TestPageCarriesStatus(t *testing.T) {
	const status = `{"pipeline":"p","state":"running","records_in":42}`
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pipeline" || r.Method != "GET" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, status)
	})
	h, err := dashboard.Mount(api, dashboard.Options{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	first := regexp.MustCompile(`(?s)<script type="application/json" id="first-status">(.*?)</script>`)
	with := get(t, h, "/", "Authorization: Bearer secret")
	m := first.FindStringSubmatch(with.Body.String())
	if m == nil || strings.TrimSpace(m[1]) != status {
		t.Errorf("the page with a reader the API answers: first status %q, want %s", m, status)
	}
	if cc := with.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the page carrying the status: Cache-Control %q, want no-store", cc)
	}
	m = first.FindStringSubmatch(get(t, h, "/").Body.String())
	if m == nil || strings.TrimSpace(m[1]) != "null" {
		t.Errorf("the page with a reader the API refuses: first status %q, want null", m)
	}
}

// TestPageStatusStaysData: a status whose text would close the page's
// script element (had the API's JSON not escaped it) stays data.
func TestPageStatusStaysData(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"pipeline":"</script><script>alert(1)</script>"}`)
	})
	h, err := dashboard.Mount(api, dashboard.Options{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if page := get(t, h, "/").Body.String(); strings.Contains(page, "<script>alert") || !strings.Contains(page, `"pipeline":"\u003c/script\u003e`) {
		t.Errorf("the status broke out of its element:\n%s", page)
	}
}
