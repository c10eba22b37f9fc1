package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The deterministic environment, tested on the engine the build tags
// select: a raw module that calls the WASI functions itself, and the Go
// guest "sandbox" that reaches them through Go's runtime and standard
// library.

// Opcodes the raw WASI module needs besides wasmbin_test.go's.
const (
	opDrop     byte = 0x1a
	opI64Load  byte = 0x29
	opI64Const byte = 0x42
)

// wasiEnvModule imports clock_time_get and random_get and exports
// clock(id) -> i64, which reads clock id, clock_errno(id) -> i32, rand() ->
// i64, which reads 8 random bytes, and rand_twice() -> i64, which reads 8
// random bytes twice and returns the second 8.
func wasiEnvModule() []byte {
	const slot = 16 // where the WASI calls write
	call := func(body ...byte) []byte { return body }
	return wasmModule{
		start:  -1,
		memory: 1,
		imports: []wasmImport{
			{module: wasiModule, name: "clock_time_get", params: []byte{wI32, wI64, wI32}, results: []byte{wI32}},
			{module: wasiModule, name: "random_get", params: []byte{wI32, wI32}, results: []byte{wI32}},
		},
		funcs: []wasmFunc{
			{export: "clock", params: []byte{wI32}, results: []byte{wI64}, body: call(
				opLocalGet, 0, opI64Const, 0, opI32Const, slot, opCall, 0, opDrop,
				opI32Const, slot, opI64Load, 3, 0)},
			{export: "clock_errno", params: []byte{wI32}, results: []byte{wI32}, body: call(
				opLocalGet, 0, opI64Const, 0, opI32Const, slot, opCall, 0)},
			{export: "rand", results: []byte{wI64}, body: call(
				opI32Const, slot, opI32Const, 8, opCall, 1, opDrop,
				opI32Const, slot, opI64Load, 3, 0)},
			{export: "rand_twice", results: []byte{wI64}, body: call(
				opI32Const, slot, opI32Const, 8, opCall, 1, opDrop,
				opI32Const, slot, opI32Const, 8, opCall, 1, opDrop,
				opI32Const, slot, opI64Load, 3, 0)},
		},
	}.encode()
}

// WASI clock ids.
const (
	clockRealtime  = 0
	clockMonotonic = 1
)

// stream returns the k-th 8-byte word of the random stream of seed.
func stream(seed [2]uint64, k int) uint64 {
	return binary.LittleEndian.Uint64(RandomStream(seed, 8*(k+1))[8*k:])
}

// reading is what one call of the raw module observed.
type reading struct {
	wall1, wall2, mono1, mono2 int64
	rand1, rand2               uint64
}

// read sets env on inst and reads each clock twice and two random words,
// in separate calls.
func read(t *testing.T, inst Instance, env CallEnv) reading {
	t.Helper()
	inst.SetCallEnv(env)
	return reading{
		wall1: int64(call(t, inst, "clock", clockRealtime)),
		mono1: int64(call(t, inst, "clock", clockMonotonic)),
		rand1: call(t, inst, "rand"),
		wall2: int64(call(t, inst, "clock", clockRealtime)),
		mono2: int64(call(t, inst, "clock", clockMonotonic)),
		rand2: call(t, inst, "rand"),
	}
}

func TestCallEnvRawModule(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "wasienv", wasiEnvModule())
	a, b := instantiate(t, m), instantiate(t, m)
	env := CallEnv{Time: time.Date(2025, 3, 1, 12, 0, 0, 7, time.UTC).UnixNano(), Seed: [2]uint64{41, 42}}
	want := reading{wall1: env.Time, wall2: env.Time, mono1: MonotonicOrigin, mono2: MonotonicOrigin,
		rand1: stream(env.Seed, 0), rand2: stream(env.Seed, 1)}

	if got := read(t, a, env); got != want {
		t.Errorf("instance a read %+v, want %+v", got, want)
	}
	// Another environment in between, then the same one again: the same
	// readings, on the same instance and on another.
	other := read(t, a, CallEnv{Time: 5, Seed: [2]uint64{1, 2}})
	if other.wall1 != 5 || other.rand1 != stream([2]uint64{1, 2}, 0) {
		t.Errorf("another environment read %+v", other)
	}
	if other.rand1 == want.rand1 {
		t.Errorf("different seeds gave the same random word %x", other.rand1)
	}
	if got := read(t, a, env); got != want {
		t.Errorf("instance a, environment set again, read %+v, want %+v", got, want)
	}
	if got := read(t, b, env); got != want {
		t.Errorf("instance b read %+v, want %+v", got, want)
	}
	// Two reads in one call are the stream's first two words, as two
	// reads in two calls are.
	b.SetCallEnv(env)
	if got := call(t, b, "rand_twice"); got != want.rand2 {
		t.Errorf("the second read of one call = %x, want %x", got, want.rand2)
	}
	if got := read(t, b, CallEnv{Time: -10, Seed: env.Seed}); got.wall1 != 0 {
		t.Errorf("negative time read as %d, want 0", got.wall1)
	}
	if errno := call(t, a, "clock_errno", 7); errno != 28 {
		t.Errorf("clock_time_get of an unknown clock = errno %d, want 28 (EINVAL)", errno)
	}
}

// countingSeeder is a Seeder that counts how often it is asked.
type countingSeeder struct {
	seed  [2]uint64
	asked int
}

func (s *countingSeeder) Seed() [2]uint64 { s.asked++; return s.seed }

// TestCallEnvSeeder: a CallEnv's Seeder gives the stream Seed would, is
// asked once, at the guest's first random read, and never for calls that
// read no random bytes; a later SetCallEnv with a Seed forgets it.
func TestCallEnvSeeder(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "wasienv", wasiEnvModule())
	inst := instantiate(t, m)
	s := &countingSeeder{seed: [2]uint64{41, 42}}
	inst.SetCallEnv(CallEnv{Time: 5, Seed: [2]uint64{1, 2}, Seeder: s})
	if got := call(t, inst, "clock", clockRealtime); got != 5 {
		t.Errorf("clock read %d, want 5", got)
	}
	if s.asked != 0 {
		t.Errorf("seeder asked %d times before a random read, want 0", s.asked)
	}
	if got, want := call(t, inst, "rand"), stream(s.seed, 0); got != want {
		t.Errorf("first random word %x, want the seeder's stream's %x", got, want)
	}
	if got, want := call(t, inst, "rand"), stream(s.seed, 1); got != want {
		t.Errorf("second random word %x, want %x", got, want)
	}
	if s.asked != 1 {
		t.Errorf("seeder asked %d times, want 1", s.asked)
	}
	// The same Seeder set again restarts its stream.
	inst.SetCallEnv(CallEnv{Seeder: s})
	if got, want := call(t, inst, "rand"), stream(s.seed, 0); got != want {
		t.Errorf("after SetCallEnv again: %x, want %x", got, want)
	}
	inst.SetCallEnv(CallEnv{Seed: [2]uint64{1, 2}})
	if got, want := call(t, inst, "rand"), stream([2]uint64{1, 2}, 0); got != want || s.asked != 2 {
		t.Errorf("with a Seed and no Seeder: %x, want %x, seeder asked %d times, want 2", got, want, s.asked)
	}
}

func TestCallEnvZeroAtStart(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "wasienv", wasiEnvModule()))
	if got := int64(call(t, inst, "clock", clockRealtime)); got != 0 {
		t.Errorf("realtime of a fresh instance = %d, want 0", got)
	}
	if got := int64(call(t, inst, "clock", clockMonotonic)); got != MonotonicOrigin {
		t.Errorf("monotonic of a fresh instance = %d, want %d", got, MonotonicOrigin)
	}
	if got := call(t, inst, "rand"); got != stream([2]uint64{}, 0) {
		t.Errorf("random of a fresh instance = %x, want the stream of seed zero", got)
	}
}

func TestRandomStreamIsStable(t *testing.T) {
	// Recovery relies on the stream of a seed: the same event must draw
	// the same bytes in the next release of the host. This pins it.
	got := RandomStream([2]uint64{1, 2}, 8)
	if want := "10f5ee5686a5f5c4"; hex.EncodeToString(got) != want {
		t.Errorf("RandomStream({1, 2}, 8) = %x, want %s", got, want)
	}
	// Bytes come in order whatever the sizes of the reads.
	whole := RandomStream([2]uint64{1, 2}, 40)
	var r randomStream
	r.seed([2]uint64{1, 2})
	var pieces []byte
	for _, n := range []int{3, 5, 1, 16, 2, 13} {
		p := make([]byte, n)
		_, _ = r.Read(p)
		pieces = append(pieces, p...)
	}
	if !bytes.Equal(pieces, whole) {
		t.Errorf("reads of 3, 5, 1, 16, 2 and 13 bytes gave\n%x, one read of 40\n%x", pieces, whole)
	}
}

// goReading is what the Go guest observed under one environment.
type goReading struct {
	now, nowAfterGC, rand1, rand2 int64
}

func readGo(t *testing.T, inst Instance, env CallEnv) goReading {
	t.Helper()
	inst.SetCallEnv(env)
	return goReading{
		now:        int64(call(t, inst, "now_unix_nano")),
		rand1:      int64(call(t, inst, "random_u64")),
		nowAfterGC: int64(call(t, inst, "gc_now")),
		rand2:      int64(call(t, inst, "random_u64")),
	}
}

// A Go guest's time.Now and crypto/rand answer from the environment,
// whatever the instance did before: garbage collections, sleeps, other
// environments.
func TestCallEnvGoGuest(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "sandbox", guests["sandbox"])
	a, b := instantiate(t, m), instantiate(t, m)
	env := CallEnv{Time: time.Date(2024, 2, 29, 23, 59, 59, 999, time.UTC).UnixNano(), Seed: [2]uint64{7, 8}}
	want := goReading{now: env.Time, nowAfterGC: env.Time,
		rand1: int64(stream(env.Seed, 0)), rand2: int64(stream(env.Seed, 1))}
	if got := readGo(t, a, env); got != want {
		t.Errorf("instance a read %+v, want %+v", got, want)
	}
	// b has a history: another environment, a sleep, a collection.
	b.SetCallEnv(CallEnv{Time: 99, Seed: [2]uint64{9, 9}})
	call(t, b, "sleep_elapsed", 30)
	call(t, b, "gc_now")
	call(t, b, "random_u64")
	if got := readGo(t, b, env); got != want {
		t.Errorf("instance b, after other calls, read %+v, want %+v", got, want)
	}
	if got := readGo(t, a, CallEnv{Time: env.Time, Seed: [2]uint64{7, 9}}); got.rand1 == want.rand1 || got.rand2 == want.rand2 {
		t.Errorf("another seed drew the same random words: %+v", got)
	}
}

// A Go guest's sleep returns at once and advances the monotonic clock by
// exactly the time asked for, not the realtime clock; the next environment
// starts the monotonic clock over.
func TestCallEnvSleep(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "sandbox", guests["sandbox"]))
	env := CallEnv{Time: 1_700_000_000_000_000_000, Seed: [2]uint64{1, 1}}
	inst.SetCallEnv(env)
	if got := time.Duration(call(t, inst, "sleep_elapsed", 250)); got != 250*time.Millisecond {
		t.Errorf("a 250 ms sleep took %v by the guest's clock, want exactly 250ms", got)
	}
	if got := int64(call(t, inst, "monotonic")); got < MonotonicOrigin+int64(250*time.Millisecond) {
		t.Errorf("monotonic after the sleep = %d, want at least origin + 250 ms", got)
	}
	if got := int64(call(t, inst, "now_unix_nano")); got != env.Time {
		t.Errorf("realtime after the sleep = %d, want the event time %d", got, env.Time)
	}
	inst.SetCallEnv(env)
	if got := int64(call(t, inst, "monotonic")); got != MonotonicOrigin {
		t.Errorf("monotonic after SetCallEnv = %d, want %d", got, MonotonicOrigin)
	}
}

// Granted, the clocks are the host's and the random source its entropy.
func TestGrantWallClockAndEntropy(t *testing.T) {
	e := newEngine(t, baseConfig().WithGrants(Grants{WallClock: true, Entropy: true}))
	m := compile(t, e, "sandbox", guests["sandbox"])
	a, b := instantiate(t, m), instantiate(t, m)
	env := CallEnv{Time: 12345, Seed: [2]uint64{3, 4}}
	a.SetCallEnv(env)
	b.SetCallEnv(env)
	before := time.Now().UnixNano()
	now := int64(call(t, a, "now_unix_nano"))
	after := time.Now().UnixNano()
	if now < before || now > after {
		t.Errorf("granted clock read %d, outside the host's [%d, %d]", now, before, after)
	}
	if slept := time.Duration(call(t, a, "sleep_elapsed", 2)); slept < 2*time.Millisecond {
		t.Errorf("a granted 2 ms sleep took %v", slept)
	}
	ra, rb := int64(call(t, a, "random_u64")), int64(call(t, b, "random_u64"))
	if ra == rb || ra == int64(stream(env.Seed, 0)) {
		t.Errorf("granted entropy drew %x and %x (the seed's stream starts %x)", ra, rb, stream(env.Seed, 0))
	}
}

// Without grants a guest has no environment and no files: opening one is
// an error the guest handles, not a crash.
func TestNoGrants(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "sandbox", guests["sandbox"]))
	if n := int32(call(t, inst, "env_count")); n != 0 {
		t.Errorf("the guest sees %d environment variables, want none", n)
	}
	if n := int32(call(t, inst, "env_len")); n != -1 {
		t.Errorf("SLUICE_GRANT has length %d, want unset (-1)", n)
	}
	for _, export := range []string{"read_file", "read_outside", "write_file"} {
		// Go's wasip1 port finds no preopened directory for the path.
		if got := int64(call(t, inst, export)); got != -9 {
			t.Errorf("%s = %d, want EBADF (-9)", export, got)
		}
	}
}

func TestGrantEnv(t *testing.T) {
	e := newEngine(t, baseConfig().WithGrants(Grants{Env: map[string]string{"SLUICE_GRANT": "granted", "B": "", "A": "1"}}))
	inst := instantiate(t, compile(t, e, "sandbox", guests["sandbox"]))
	if n := int32(call(t, inst, "env_count")); n != 3 {
		t.Errorf("the guest sees %d environment variables, want 3", n)
	}
	if n := int32(call(t, inst, "env_len")); n != int32(len("granted")) {
		t.Errorf("SLUICE_GRANT has length %d, want %d", n, len("granted"))
	}
}

func TestGrantDirs(t *testing.T) {
	const hello = "hello from the host\n"
	for _, writable := range []bool{false, true} {
		name := "read-only"
		if writable {
			name = "writable"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte(hello), 0o644); err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, baseConfig().WithGrants(Grants{Dirs: []Dir{{Host: dir, Guest: "/grant", Writable: writable}}}))
			inst := instantiate(t, compile(t, e, "sandbox", guests["sandbox"]))
			if got := int64(call(t, inst, "read_file")); got != int64(len(hello)) {
				t.Errorf("read_file = %d, want %d", got, len(hello))
			}
			if got := int64(call(t, inst, "read_outside")); got >= 0 {
				t.Errorf("read_outside = %d: a file outside the grant was read", got)
			}
			got := int64(call(t, inst, "write_file"))
			_, statErr := os.Stat(filepath.Join(dir, "out.txt"))
			switch {
			case writable && (got <= 0 || statErr != nil):
				t.Errorf("write_file = %d (host file: %v), want a written file", got, statErr)
			case !writable && (got >= 0 || statErr == nil):
				t.Errorf("write_file = %d (host file: %v), want an error and no file", got, statErr)
			}
		})
	}
}

func TestGrantsValidation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		g    Grants
		want string
	}{
		{Grants{Env: map[string]string{"": "x"}}, "empty name"},
		{Grants{Env: map[string]string{"A=B": "x"}}, `"A=B"`},
		{Grants{Env: map[string]string{"A": "x\x00"}}, "NUL"},
		{Grants{Dirs: []Dir{{Host: "", Guest: "/data"}}}, "no host directory"},
		{Grants{Dirs: []Dir{{Host: dir, Guest: "data"}}}, `guest path "data"`},
		{Grants{Dirs: []Dir{{Host: dir, Guest: "/data/../x"}}}, "not a clean absolute path"},
		{Grants{Dirs: []Dir{{Host: dir, Guest: "/a"}, {Host: dir, Guest: "/a"}}}, "granted twice"},
		{Grants{Dirs: []Dir{{Host: filepath.Join(dir, "missing"), Guest: "/a"}}}, "missing"},
		{Grants{Dirs: []Dir{{Host: file, Guest: "/a"}}}, "is not a directory"},
	} {
		_, err := newEngineErr(baseConfig().WithGrants(c.g))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("grants %+v: error %v, want one mentioning %q", c.g, err, c.want)
		}
	}
}

func TestWithGrantsCopies(t *testing.T) {
	env := map[string]string{"A": "1"}
	dirs := []Dir{{Host: "/tmp", Guest: "/tmp"}}
	cfg := NewConfig().WithGrants(Grants{Env: env, Dirs: dirs})
	env["A"], dirs[0].Guest = "2", "/changed"
	g := cfg.Grants()
	if g.Env["A"] != "1" || g.Dirs[0].Guest != "/tmp" {
		t.Errorf("the Config shares the caller's grants: %+v", g)
	}
	g.Env["A"] = "3"
	if cfg.Grants().Env["A"] != "1" {
		t.Error("Grants returns the Config's own map")
	}
}

// BenchmarkCallEnv measures what determinism costs a call: SetCallEnv
// before an empty call, against the call alone, and the first random read
// after it, which seeds the stream.
//
//	go test -run XXX -bench CallEnv ./runtime/
func BenchmarkCallEnv(b *testing.B) {
	e := newEngine(b, testConfig().WithCallTimeout(0))
	raw := instantiate(b, compile(b, e, "raw", rawModule()))
	wasi := instantiate(b, compile(b, e, "wasienv", wasiEnvModule()))
	noop, rnd := fn(b, raw, "noop"), fn(b, wasi, "rand")
	ctx := context.Background()
	stack := make([]uint64, 2)
	run := func(name string, f Func, set Instance) {
		b.Run(engineName+"/"+name, func(b *testing.B) {
			b.ReportAllocs()
			var k uint64
			for b.Loop() {
				if set != nil {
					k++
					set.SetCallEnv(CallEnv{Time: int64(k), Seed: [2]uint64{k, k}})
				}
				if err := f.Call(ctx, stack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("call", noop, nil)
	run("set-and-call", noop, raw)
	run("random-8", rnd, nil)
	run("set-and-random-8", rnd, wasi)
}

// BenchmarkGuestEnv measures the environment alone, without a guest call:
// what SetCallEnv does, and a random_get of 8 bytes after it.
func BenchmarkGuestEnv(b *testing.B) {
	e := newGuestEnv(&Grants{})
	var p [8]byte
	b.Run("set", func(b *testing.B) {
		for k := 0; b.Loop(); k++ {
			e.set(CallEnv{Time: int64(k), Seed: [2]uint64{uint64(k), 1}})
		}
	})
	b.Run("set-and-read-8", func(b *testing.B) {
		for k := 0; b.Loop(); k++ {
			e.set(CallEnv{Time: int64(k), Seed: [2]uint64{uint64(k), 1}})
			_, _ = e.Read(p[:])
		}
	})
}

// fsOp runs one file operation in the sandbox guest (see its fs_op):
// the bytes read or written, the entries listed, zero, or minus the errno.
func fsOp(t *testing.T, inst Instance, args ...string) int64 {
	t.Helper()
	addr := uint32(call(t, inst, "fs_buf"))
	op := []byte(strings.Join(args, "\x00"))
	if !inst.Memory().Write(addr, op) {
		t.Fatalf("writing %q into the guest at %d", op, addr)
	}
	return int64(call(t, inst, "fs_op", uint64(len(op))))
}

// WASI errnos the sandbox guest returns.
const (
	wasiEEXIST = 20
	wasiEPERM  = 63
)

// A granted directory confines the guest whatever links it holds: links
// there before (relative, absolute, nested), links the guest makes, ".."
// after a link, and hard links never reach a file outside, to read or to
// write; links that stay inside work. Run on each engine; the refusal to
// make a link that points out is wazero's (abi/ABI.md section 6).
func TestGrantDirsConfined(t *testing.T) {
	top := t.TempDir()
	grant, outside := filepath.Join(top, "grant"), filepath.Join(top, "outside")
	for _, d := range []string{grant, outside, filepath.Join(grant, "inner")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "outside the grant\n"
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(grant, "hello.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"pre":       "../outside",
		"pre-abs":   outside,
		"inner/pre": "../../outside",
		"pre-file":  filepath.Join(outside, "secret.txt"),
		"pre-etc":   "../../../../../../../../../etc",
	} {
		if err := os.Symlink(target, filepath.Join(grant, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, writable := range []bool{false, true} {
		name := "read-only"
		if writable {
			name = "writable"
		}
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, baseConfig().WithGrants(Grants{Dirs: []Dir{{Host: grant, Guest: "/data", Writable: writable}}}))
			inst := instantiate(t, compile(t, e, "sandbox", guests["sandbox"]))
			for _, p := range []string{
				"/data/pre/secret.txt", "/data/pre-abs/secret.txt", "/data/inner/pre/secret.txt",
				"/data/pre-file", "/data/pre-etc/passwd", "/data/pre-etc/hostname",
				"/data/inner/../pre/secret.txt", "/data/inner/pre/../outside/secret.txt",
				"/data/../outside/secret.txt",
			} {
				if got := fsOp(t, inst, "read", p); got >= 0 {
					t.Errorf("read %s = %d bytes: a file outside the grant was read", p, got)
				}
				if got := fsOp(t, inst, "stat", p); got >= 0 {
					t.Errorf("stat %s = %d: a file outside the grant was found", p, got)
				}
			}
			if got := fsOp(t, inst, "list", "/data/pre"); got >= 0 {
				t.Errorf("list /data/pre = %d entries: a directory outside the grant was listed", got)
			}
			for _, op := range [][]string{
				{"write", "/data/pre/new.txt"},
				{"write", "/data/pre-file"},
				{"append", "/data/pre-file"},
				{"mkdir", "/data/pre-abs/dir"},
				{"rename", "/data/hello.txt", "/data/pre/hello.txt"},
				{"rename", "/data/pre/secret.txt", "/data/stolen.txt"},
				{"link", "/data/pre/secret.txt", "/data/hard.txt"},
				{"link", "/data/hello.txt", "/data/pre/hard.txt"},
				{"remove", "/data/pre/secret.txt"},
				{"symlink", "x", "/data/pre/made"},
				{"symlink", "/etc", "/data/abs"},
			} {
				if got := fsOp(t, inst, op...); got >= 0 {
					t.Errorf("%v = %d, want an error", op, got)
				}
			}
			if engineName == "wazero" || !writable {
				// On wazero, a link that points out as written is refused
				// outright (EPERM). wasmtime makes it, and never follows it
				// out (above).
				for _, op := range [][]string{
					{"symlink", "../../../../etc", "/data/esc"},
					{"symlink", "../../outside", "/data/inner/esc"},
				} {
					if got := fsOp(t, inst, op...); got >= 0 || writable && got != -wasiEPERM {
						t.Errorf("%v = %d, want EPERM (-%d)", op, got, wasiEPERM)
					}
				}
			}
			if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != secret {
				t.Errorf("the file outside the grant is now %q (%v)", b, err)
			}
			for _, dir := range []string{top, outside} {
				ents, _ := os.ReadDir(dir)
				if len(ents) != 2 && dir == top || len(ents) != 1 && dir == outside {
					t.Errorf("%s holds %d entries: the guest wrote outside the grant", dir, len(ents))
				}
			}
			if got := fsOp(t, inst, "read", "/data/hello.txt"); got != int64(len("hello")) {
				t.Errorf("read /data/hello.txt = %d", got)
			}
			if !writable {
				return
			}
			// Links and hard links inside the grant work.
			for _, op := range [][]string{
				{"symlink", "hello.txt", "/data/ln"},
				{"symlink", "../hello.txt", "/data/inner/ln"},
				{"symlink", ".", "/data/self"},
				{"link", "/data/hello.txt", "/data/inner/hard.txt"},
			} {
				if got := fsOp(t, inst, op...); got != 0 {
					t.Fatalf("%v = %d", op, got)
				}
			}
			for _, p := range []string{"/data/ln", "/data/inner/ln", "/data/self/self/hello.txt", "/data/inner/hard.txt"} {
				if got := fsOp(t, inst, "read", p); got != int64(len("hello")) {
					t.Errorf("read %s = %d, want %d", p, got, len("hello"))
				}
			}
			// Through self -> ".", a link that looks inside as written
			// climbs out once resolved: it is never followed out.
			fsOp(t, inst, "symlink", "../outside", "/data/self/chain")
			if got := fsOp(t, inst, "read", "/data/self/chain/secret.txt"); got >= 0 {
				t.Errorf("read through a chain of links = %d bytes: a file outside the grant was read", got)
			}
			if got := fsOp(t, inst, "mkdir", "/data/inner"); got != -wasiEEXIST {
				t.Errorf("mkdir an existing directory = %d, want EEXIST", got)
			}
		})
	}
}
