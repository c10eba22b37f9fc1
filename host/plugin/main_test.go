package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// guestNames are the raw guests under testdata/guests, built once by TestMain.
var guestNames = []string{"ops", "upper", "badabi", "version2"}

// testEnv holds what TestMain prepares for every test: the guests' bytes and
// a directory for wazero's compilation cache, so each test engine compiles a
// guest in milliseconds rather than half a second.
type testEnv struct {
	guests   map[string][]byte
	cacheDir string
}

var env testEnv

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env = testEnv{guests: make(map[string][]byte), cacheDir: filepath.Join(dir, "cache")}
	if err := buildGuests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// buildGuests compiles every guest under testdata/guests.
func buildGuests() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dirs := make(map[string]string, len(guestNames))
	for _, name := range guestNames {
		dirs[name] = filepath.Join("testdata", "guests", name)
	}
	mods, err := wasmbuild.GoModules(ctx, dirs)
	env.guests = mods
	return err
}

// guest returns the bytes of a built guest.
func guest(t testing.TB, name string) []byte {
	t.Helper()
	b, ok := env.guests[name]
	if !ok {
		t.Fatalf("no guest %q", name)
	}
	return b
}

// engineConfig is the runtime configuration of test engines: the plugin
// host functions, the shared compilation cache and a call timeout long
// enough that no call ends by it on a loaded machine under the race
// detector, unless a test means it to (those set their own, short one).
func engineConfig() runtime.Config {
	return runtime.NewConfig().
		WithHostModules(HostModule()).
		WithCacheDir(env.cacheDir).
		WithCallTimeout(2 * time.Minute)
}

// newEngine returns an engine closed when t ends.
func newEngine(t testing.TB, cfg runtime.Config) runtime.Engine {
	t.Helper()
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return eng
}

// fixture is a loaded plugin, one instance of it, the log the guest writes
// to, and a State for keyed operators.
type fixture struct {
	t    testing.TB
	p    *Plugin
	inst *Instance
	log  *bytes.Buffer
	st   *fakeState
	// config is the instance's configuration, which the "config" record echoes.
	config string
}

type fixtureConfig struct {
	guest  string
	kind   Kind
	limits Limits
	config string
	// timeout is the engine's call timeout: 0 for the default of the
	// tests, negative for none.
	timeout time.Duration
}

func newFixture(t testing.TB, fc fixtureConfig) *fixture {
	t.Helper()
	if fc.guest == "" {
		fc.guest = "ops"
	}
	if fc.kind == "" {
		fc.kind = KindMap
	}
	cfg := engineConfig()
	if fc.timeout > 0 {
		cfg = cfg.WithCallTimeout(fc.timeout)
	} else if fc.timeout < 0 {
		cfg = cfg.WithCallTimeout(0)
	}
	ctx := context.Background()
	eng := newEngine(t, cfg)
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logBuf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := Load(ctx, eng, fc.guest+".wasm", guest(t, fc.guest), fc.kind, WithLimits(fc.limits), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.NewInstance(ctx, []byte(fc.config))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &fixture{t: t, p: p, inst: inst, log: &logBuf, st: newFakeState(), config: fc.config}
}

// process runs values (one record each, keyed k0, k1...) through the
// instance and returns the output.
func (f *fixture) process(values ...string) *Output {
	f.t.Helper()
	var out Output
	if err := f.inst.Process(context.Background(), records(values...), f.st, &out); err != nil {
		f.t.Fatalf("Process: %v", err)
	}
	return &out
}

// records makes one record per value, keyed "k<i>", at time 1000+i.
func records(values ...string) []abi.Record {
	in := make([]abi.Record, len(values))
	for i, v := range values {
		in[i] = abi.Record{Origin: 99, Time: int64(1000 + i), Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)}
	}
	return in
}

// syncWriter serialises writes to a buffer shared by loggers.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Errors of fakeState.
var (
	errUnknownTable = errors.New("table not declared for the operator")
	errForeignKey   = errors.New("key outside the worker's key groups")
)

// fakeState is an in-memory State with savepoints kept as an undo log.
// Tables "counts" (handle 0) and "totals" (handle 1) are declared; keys
// starting with "foreign" belong to another worker.
type fakeState struct {
	data map[int32]map[string]string
	undo []undoEntry
	puts int // successful Put calls, to tell that a guest call touched state
}

type undoEntry struct {
	table int32
	key   string
	old   string
	had   bool
}

func newFakeState() *fakeState {
	return &fakeState{data: map[int32]map[string]string{0: {}, 1: {}}}
}

func (s *fakeState) TableID(name string) (int32, bool) {
	switch name {
	case "counts":
		return 0, true
	case "totals":
		return 1, true
	}
	return 0, false
}

func (s *fakeState) check(table int32, key []byte) (map[string]string, error) {
	t, ok := s.data[table]
	if !ok {
		return nil, fmt.Errorf("table handle %d: %w", table, errUnknownTable)
	}
	if bytes.HasPrefix(key, []byte("foreign")) {
		return nil, fmt.Errorf("key %q: %w", key, errForeignKey)
	}
	return t, nil
}

func (s *fakeState) Get(table int32, key []byte) ([]byte, bool, error) {
	t, err := s.check(table, key)
	if err != nil {
		return nil, false, err
	}
	v, ok := t[string(key)]
	return []byte(v), ok, nil
}

func (s *fakeState) Put(table int32, key, value []byte) error {
	t, err := s.check(table, key)
	if err != nil {
		return err
	}
	old, had := t[string(key)]
	s.undo = append(s.undo, undoEntry{table, string(key), old, had})
	t[string(key)] = string(value)
	s.puts++
	return nil
}

func (s *fakeState) Delete(table int32, key []byte) error {
	t, err := s.check(table, key)
	if err != nil {
		return err
	}
	old, had := t[string(key)]
	s.undo = append(s.undo, undoEntry{table, string(key), old, had})
	delete(t, string(key))
	return nil
}

func (s *fakeState) Savepoint() int { return len(s.undo) }

func (s *fakeState) RollbackTo(sp int) {
	for len(s.undo) > sp {
		u := s.undo[len(s.undo)-1]
		s.undo = s.undo[:len(s.undo)-1]
		if u.had {
			s.data[u.table][u.key] = u.old
		} else {
			delete(s.data[u.table], u.key)
		}
	}
}
