package runner

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// nats.go's object store Put leaves, about once in 300 puts, its
		// reconnect listener waiting on a channel it cleared (a race in
		// the library; see package checkpoint): cluster hosts put
		// checkpoints.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, path, table string) (map[string]string, error) {
	t.Helper()
	got := map[string]string{}
	err := readInitFile(path, table, func(k, v []byte) error {
		got[string(k)] = string(v)
		return nil
	})
	return got, err
}

func TestReadInitFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "init.jsonl")
	writeFile(t, path, `{"key": "alice", "value": "100"}

{"key_base64": "AAE=", "value_base64": "/w=="}
  {"key": "bob", "value": ""}
{"table": "accounts", "key": "alice", "value": "7"}
{"table": "other", "key": "carol", "value": "1"}
{"key": "", "value": "empty key"}
{"table": "accounts", "key": "dave", "value": "3", "key_group": 5}`)
	got, err := readAll(t, path, "accounts")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"alice": "7", "\x00\x01": "\xff", "bob": "", "": "empty key", "dave": "3"}
	if !maps.Equal(got, want) {
		t.Errorf("entries %q, want %q (the last value of a key, other tables' lines skipped)", got, want)
	}
}

func TestReadInitFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, line string
		want       string
	}{
		{"not json", `alice,100`, "not an entry"},
		{"unknown field", `{"key": "a", "val": "1"}`, `unknown field "val"`},
		{"no key", `{"value": "1"}`, `no key (write "key" or "key_base64")`},
		{"no value", `{"key": "a"}`, `no value (write "value" or "value_base64")`},
		{"both keys", `{"key": "a", "key_base64": "YQ==", "value": "1"}`, "key and key_base64 are both given"},
		{"bad base64", `{"key": "a", "value_base64": "!!"}`, "value_base64 is not standard base64"},
		{"two values", `{"key": "a", "value": "1"} {"key": "b", "value": "2"}`, "more than one JSON value"},
		{"number", `{"key": "a", "value": 1}`, "not an entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
			writeFile(t, path, "{\"key\": \"ok\", \"value\": \"1\"}\n\n"+tc.line+"\n")
			_, err := readAll(t, path, "t")
			if err == nil {
				t.Fatal("no error")
			}
			var pe *pipeline.Error
			if !errors.As(err, &pe) || pe.File != path || pe.Line != 3 {
				t.Errorf("error %v: want a *pipeline.Error at %s:3", err, path)
			}
			if !strings.Contains(err.Error(), path+":3: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %s:3 and %q", err, path, tc.want)
			}
		})
	}
	if _, err := readAll(t, filepath.Join(dir, "missing.jsonl"), "t"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

const txnPipeline = `
sources: [{name: in, type: file, path: in.jsonl}]
operators:
  - name: ledger
    plugin: ledger.wasm
    kind: transactional
    tables:
      - name: accounts
        init: {generator: {app: sl, keys: 50, seed: 3}}
      - name: books
        init: {generator: {app: sl, keys: 40, table: book_entries}}
      - name: audit
        init: {file: audit.jsonl}
      - name: scratch
sinks: [{name: out, type: file, path: out.jsonl}]
`

func openStore(t *testing.T, dir string) *state.Store {
	t.Helper()
	s, err := state.Open(dir, state.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scan(t *testing.T, s *state.Store, table string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := s.Scan(table, func(k, v []byte) error {
		got[string(k)] = string(v)
		return nil
	})
	if err != nil && !errors.Is(err, state.ErrUnknownTable) {
		t.Fatal(err)
	}
	return got
}

// newWorkload returns application app's workload with its default knobs
// and, when keys is not 0, keys keys.
func newWorkload(t *testing.T, app string, keys int) workload.App {
	t.Helper()
	k, err := workload.Defaults(app)
	if err != nil {
		t.Fatal(err)
	}
	if keys != 0 {
		k.Keys = keys
	}
	w, err := workload.New(app, k)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// initial returns a workload table's initial entries, from the workload
// package itself.
func initial(t *testing.T, app string, keys int, table string) map[string]string {
	t.Helper()
	w := newWorkload(t, app, keys)
	want := map[string]string{}
	err := w.Initial(func(tb int, key, value []byte) error {
		if w.Tables()[tb] == table {
			want[string(key)] = string(value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestInitTables initialises tables from generators and a file at the
// first start, and leaves them alone once a batch was committed or when
// they already hold entries.
func TestInitTables(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "audit.jsonl"), `{"key": "x", "value": "1"}`+"\n"+`{"key": "y", "value": "2"}`+"\n")
	p, err := pipeline.Parse("p.yaml", dir, []byte(txnPipeline))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	storeDir := filepath.Join(dir, "state")
	s := openStore(t, storeDir)
	n, err := initTables(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	if n != 50+40+2 {
		t.Errorf("%d entries written, want 92", n)
	}
	s.Close()

	s = openStore(t, storeDir) // what was written is committed
	if got, want := scan(t, s, "accounts"), initial(t, "sl", 50, "accounts"); !maps.Equal(got, want) || len(got) != 50 {
		t.Errorf("accounts: %d entries, want the workload's %d", len(got), len(want))
	}
	if got, want := scan(t, s, "books"), initial(t, "sl", 40, "book_entries"); !maps.Equal(got, want) || len(got) != 40 {
		t.Errorf("books: %d entries, want the workload's book entries (%d)", len(got), len(want))
	}
	if got := scan(t, s, "audit"); !maps.Equal(got, map[string]string{"x": "1", "y": "2"}) {
		t.Errorf("audit: %v", got)
	}
	if got := scan(t, s, "scratch"); len(got) != 0 {
		t.Errorf("scratch: %v, want empty", got)
	}

	// No positions yet, but the tables hold entries: nothing is written again.
	sess := s.NewSession()
	if err := sess.Put(s.Table("audit"), []byte("x"), []byte("changed")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if n, err := initTables(ctx, p, s); err != nil || n != 0 {
		t.Errorf("second start wrote %d entries (%v), want none", n, err)
	}
	if got := scan(t, s, "audit")["x"]; got != "changed" {
		t.Errorf("audit x = %q after a second start, want the committed value", got)
	}
	s.Close()

	// A batch was committed: an emptied table is not initialised again.
	s = openStore(t, filepath.Join(dir, "state2"))
	defer s.Close()
	if err := s.Commit(map[string]uint64{"in": 10}); err != nil {
		t.Fatal(err)
	}
	if n, err := initTables(ctx, p, s); err != nil || n != 0 {
		t.Errorf("start after a committed batch wrote %d entries (%v), want none", n, err)
	}
}

// TestInitTablesBadFile: a bad init file stops the start with an error
// naming the operator, the table, the file, the line and the problem, and
// commits nothing.
func TestInitTablesBadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeFile(t, path, `{"key": "x", "value": "1"}`+"\n"+`{"key": "y"}`+"\n")
	p, err := pipeline.Parse("p.yaml", dir, []byte(txnPipeline))
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, filepath.Join(dir, "state"))
	_, err = initTables(context.Background(), p, s)
	want := `operator "ledger": table "audit": init: ` + path + `:2: no value`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("initTables = %v, want %q", err, want)
	}
	s.Close()
	s = openStore(t, filepath.Join(dir, "state"))
	defer s.Close()
	if got := scan(t, s, "accounts"); len(got) != 0 {
		t.Errorf("%d accounts committed by a failed initialisation", len(got))
	}
}
