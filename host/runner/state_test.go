package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

const statePipeline = `
name: counting
sources:
  - {name: text, type: generator, mode: words, rate: 20000}
operators:
  - {name: split, plugin: wordsplit.wasm, kind: flatmap}
  - {name: count, plugin: wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: file, path: out.jsonl}
state:
  key_groups: 8
http:
  addr: 127.0.0.1:0
  auth: %s
`

// TestStateThroughTheAPI reads a running word count's committed state
// through GET /api/v1/state while batches commit: pages follow next to the
// end with each key once, the filters apply, and with http.auth all the
// route needs the token.
func TestStateThroughTheAPI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"wordsplit": "../../plugins/wordsplit", "wordcount": "../../plugins/wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range mods {
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(statePipeline, "all"))
	data := filepath.Join(dir, "data")
	h := startPipeline(ctx, t, dir, Options{DataDir: data})
	stop := runInBackground(ctx, h)
	defer stop()
	token, err := ReadToken(data)
	if err != nil {
		t.Fatal(err)
	}
	get := func(query, tok string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+h.HTTPAddr()+"/api/v1/state?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	page := func(query string) api.StatePage {
		t.Helper()
		code, b := get(query, token)
		var p api.StatePage
		if code != http.StatusOK || json.Unmarshal(b, &p) != nil {
			t.Fatalf("GET /api/v1/state?%s: %d %s", query, code, b)
		}
		return p
	}

	if code, b := get("", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/state with a wrong token under http.auth all: %d %s, want 401", code, b)
	}
	// Wait for a few commits and some words.
	deadline := time.Now().Add(time.Minute)
	for h.Status().Batches < 3 || len(page("table=counts&limit=1000").Entries) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d batches, %d words in state", h.Status().Batches, len(page("table=counts&limit=1000").Entries))
		}
		time.Sleep(10 * time.Millisecond)
	}

	seen := map[string]bool{}
	after, pages := "", 0
	for {
		p := page("table=counts&limit=7&after=" + url.QueryEscape(after))
		pages++
		if len(p.Entries) > 7 {
			t.Fatalf("a page of %d entries with limit=7", len(p.Entries))
		}
		for _, e := range p.Entries {
			if e.Table != "counts" || e.Key == nil || e.Value == nil {
				t.Fatalf("entry %+v", e)
			}
			if seen[*e.Key] {
				t.Errorf("word %q on two pages", *e.Key)
			}
			seen[*e.Key] = true
			if n, err := strconv.ParseUint(*e.Value, 10, 64); err != nil || n == 0 {
				t.Errorf("word %q counted %q", *e.Key, *e.Value)
			}
			if e.KeyGroup < 0 || e.KeyGroup >= 8 {
				t.Errorf("word %q in key group %d of 8", *e.Key, e.KeyGroup)
			}
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if len(seen) < 20 || pages < 3 {
		t.Errorf("%d words in %d pages", len(seen), pages)
	}
	for _, e := range page("table=counts&key_group=3&limit=1000").Entries {
		if e.KeyGroup != 3 {
			t.Errorf("key_group=3 answered %+v", e)
		}
	}
	for _, e := range page("table=counts&prefix=th&limit=1000").Entries {
		if len(*e.Key) < 2 || (*e.Key)[:2] != "th" {
			t.Errorf("prefix=th answered %+v", e)
		}
	}
	if code, b := get("table=nope", token); code != http.StatusNotFound {
		t.Errorf("an unknown table: %d %s, want 404", code, b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
