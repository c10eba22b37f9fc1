package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/state"
)

// TestStateRoute serves GET /api/v1/state from a store: pages follow next
// to the end, filters apply, bad parameters are answered 400 naming the
// parameter, an unknown table 404, and with AuthReads the route needs the
// token.
func TestStateRoute(t *testing.T) {
	o := state.DefaultOptions()
	o.KeyGroups = 4
	o.Logger = slog.New(slog.DiscardHandler)
	st, err := state.Open(filepath.Join(t.TempDir(), "state"), o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	se := st.NewSession()
	for i := range 10 {
		if err := se.Put(st.Table("counts"), fmt.Appendf(nil, "w%d", i), fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := se.Put(st.Table("bin"), []byte{0xff}, []byte{0xfe}); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(nil); err != nil {
		t.Fatal(err)
	}
	for _, authReads := range []bool{false, true} {
		t.Run(fmt.Sprintf("auth_reads=%v", authReads), func(t *testing.T) {
			h := NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, State: st, Token: "tok", AuthReads: authReads})
			srv, err := Listen("127.0.0.1:0", h, Limits{}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close(context.Background())
			get := func(query string, token string) (int, string) {
				req, _ := http.NewRequest(http.MethodGet, "http://"+srv.Addr()+"/api/v1/state?"+query, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, _ := get("", ""); authReads && code != http.StatusUnauthorized || !authReads && code != http.StatusOK {
				t.Errorf("without the token: %d", code)
			}
			page := func(query string) StatePage {
				t.Helper()
				code, body := get(query, "tok")
				var p StatePage
				if code != 200 || json.Unmarshal([]byte(body), &p) != nil {
					t.Fatalf("%s: %d %s", query, code, body)
				}
				return p
			}
			var all []StateEntry
			after, pages := "", 0
			for {
				p := page("limit=3&after=" + url.QueryEscape(after))
				all = append(all, p.Entries...)
				pages++
				if p.Next == "" {
					break
				}
				after = p.Next
			}
			if len(all) != 11 || pages != 4 {
				t.Fatalf("%d entries in %d pages, want 11 in 4", len(all), pages)
			}
			var bin StateEntry
			for _, e := range all {
				if e.Table == "bin" {
					bin = e
				}
				if e.KeyGroup != state.KeyGroup([]byte(deref(e.Key)), 4) && e.Table == "counts" {
					t.Errorf("%+v: wrong key group", e)
				}
			}
			if bin.Key != nil || bin.KeyBase64 != "/w==" || bin.Value != nil || bin.ValueBase64 != "/g==" {
				t.Errorf("binary entry %+v, want key_base64 /w== and value_base64 /g==", bin)
			}
			if p := page("table=counts&prefix=w1"); len(p.Entries) != 1 || deref(p.Entries[0].Key) != "w1" || deref(p.Entries[0].Value) != "1" {
				t.Errorf("prefix w1: %+v", p)
			}
			if p := page("prefix_base64=" + url.QueryEscape("/w==")); len(p.Entries) != 1 || p.Entries[0].Table != "bin" {
				t.Errorf("prefix_base64 /w==: %+v", p)
			}
			kg := state.KeyGroup([]byte("w3"), 4)
			for _, e := range page(fmt.Sprintf("table=counts&key_group=%d", kg)).Entries {
				if e.KeyGroup != kg {
					t.Errorf("key_group=%d: %+v", kg, e)
				}
			}
			for query, want := range map[string]struct {
				code int
				body string
			}{
				"limit=0":                     {400, `limit=\"0\"`},
				"limit=x":                     {400, `limit=\"x\"`},
				"key_group=-1":                {400, `key_group=\"-1\"`},
				"key_group=4":                 {400, "key group 4 out of range 0..3"},
				"after=zz":                    {400, "cursor"},
				"prefix=a&prefix_base64=YQ==": {400, "both given"},
				"table=nope":                  {404, `table \"nope\"`},
			} {
				if code, body := get(query, "tok"); code != want.code || !strings.Contains(body, want.body) {
					t.Errorf("%s: %d %s, want %d with %s", query, code, body, want.code, want.body)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestStateEntryNamespacedKeys: a plain key's JSON has no namespace or
// user field, as before namespaced keys; a namespaced key's has both.
func TestStateEntryNamespacedKeys(t *testing.T) {
	for _, c := range []struct {
		e    state.Entry
		want string
	}{
		{state.Entry{Table: "t", Key: []byte("k"), Value: []byte("v"), KeyGroup: 1},
			`{"table":"t","key":"k","value":"v","key_group":1}`},
		{state.Entry{Table: "t", Key: []byte("k"), Namespace: []byte("win"), User: []byte{0xff}, Value: []byte("v")},
			`{"table":"t","key":"k","namespace":"win","user_base64":"/w==","value":"v","key_group":0}`},
		{state.Entry{Table: "t", Key: []byte("k"), Namespace: []byte{}, User: []byte("u"), Value: []byte("v")},
			`{"table":"t","key":"k","namespace":"","user":"u","value":"v","key_group":0}`},
	} {
		b, err := json.Marshal(NewStateEntry(c.e))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.e, b, c.want)
		}
	}
}
