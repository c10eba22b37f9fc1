package runtime

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// CallEnv is what a guest's WASI clocks and random source answer during
// the calls that follow Instance.SetCallEnv: the deterministic environment
// of one unit of work (a batch, a transactional operation). A host that
// sets the same CallEnv before calling the same export with the same
// arguments on an instance in the same state gets the same clock readings
// and the same random bytes, on any instance of the module, on either
// engine, in any process.
//
// The zero CallEnv is what an instance starts with: the realtime clock at
// the Unix epoch and the random stream of seed zero.
type CallEnv struct {
	// Time is what the WASI realtime clock reads, in nanoseconds since the
	// Unix epoch: the event time. It does not advance during the calls; a
	// negative time reads as 0 (WASI time is unsigned).
	Time int64
	// Seed selects the random stream random_get reads from (see
	// RandomStream); each SetCallEnv restarts the stream at its beginning.
	Seed [2]uint64
	// Seeder, when not nil, gives the seed in Seed's place: it is asked
	// the first time the guest reads the random stream after SetCallEnv,
	// and never when the guest reads none. It is for a host whose seeds
	// cost more to compute than the calls that read no random bytes (most
	// of them) should pay. It is called on the goroutine calling the
	// instance, during the call, and must answer as Seed would have been
	// set: the stream is the same.
	Seeder Seeder
}

// Seeder computes the seed of a CallEnv's random stream when the guest
// first reads it.
type Seeder interface {
	// Seed returns the seed (CallEnv.Seed).
	Seed() [2]uint64
}

// MonotonicOrigin is what the WASI monotonic clock of a guest without the
// wall clock grant reads after each SetCallEnv, in nanoseconds. It then
// advances by exactly what the guest sleeps (poll_oneoff on a clock), so
// durations a guest measures are its own sleeps. It is not zero because Go's
// runtime refuses a monotonic clock that reads zero.
const MonotonicOrigin = int64(time.Second)

// clockResolution is the resolution both WASI clocks report: readings are
// whole nanoseconds.
const clockResolution = 1

// randomStream is the random stream of a seed: PCG-DXSM (math/rand/v2's
// PCG) seeded with the seed's two words, each output word little-endian,
// bytes handed out in order whatever the sizes of the reads. Seeding is
// two stores, where ChaCha8 computes its first kilobyte of output (about
// 300 ns) before the first read. The stream need not be unpredictable:
// its seed comes from the event, which is no secret.
type randomStream struct {
	pcg  rand.PCG
	word [8]byte
	left int // bytes of word not handed out yet, at its end
}

func (r *randomStream) seed(s [2]uint64) {
	r.pcg.Seed(s[0], s[1])
	r.left = 0
}

// Read fills p with the next len(p) bytes of the stream; it never fails.
func (r *randomStream) Read(p []byte) (int, error) {
	n := len(p)
	if r.left > 0 {
		k := copy(p, r.word[8-r.left:])
		r.left -= k
		p = p[k:]
	}
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, r.pcg.Uint64())
		p = p[8:]
	}
	if len(p) > 0 {
		binary.LittleEndian.PutUint64(r.word[:], r.pcg.Uint64())
		r.left = 8 - copy(p, r.word[:])
	}
	return n, nil
}

// RandomStream returns the bytes a guest without the entropy grant reads
// from random_get after SetCallEnv with seed: the first n bytes of the
// stream. Guests must not rely on the values, which a later version of the
// host may change; tests and tools compare against it.
func RandomStream(seed [2]uint64, n int) []byte {
	b := make([]byte, n)
	var r randomStream
	r.seed(seed)
	_, _ = r.Read(b)
	return b
}

// Grants is what a guest may reach beyond the deterministic sandbox. The
// zero value grants nothing: the WASI clocks read the CallEnv's time, the
// random source is the CallEnv's stream, and the guest has no environment
// variables and no files.
//
// Every grant but Env costs determinism: a guest whose results depend on
// what it reaches may compute different results when the host runs an
// operation again (after an abort, a failure, a recovery or a rollback).
// For a transactional operator that breaks the guarantee that results
// equal a serial execution; for any operator, records replayed after a
// recovery may differ from the ones published before it (and JetStream's
// de-duplication then keeps the first). Their speed costs are small (see
// each field).
type Grants struct {
	// WallClock makes the WASI clocks read the host's clocks (realtime is
	// the time of day, monotonic advances with real time) and a guest's
	// sleeps really sleep, holding its worker (and its batch) meanwhile.
	// A reading costs what time.Now does, some tens of nanoseconds.
	WallClock bool
	// Entropy makes random_get read the host's cryptographic random source
	// (crypto/rand, a getrandom system call on Linux, under a microsecond
	// for small reads) rather than the CallEnv's stream. It is the grant
	// for guests that make secrets (keys, tokens): the CallEnv's stream is
	// predictable from the event.
	Entropy bool
	// Env holds the environment variables a guest sees, in the order of
	// their names. Names must be non-empty and hold neither '=' nor NUL;
	// values must not hold NUL. They are the same in every instance, so
	// they cost no determinism, only copying into each new instance.
	Env map[string]string
	// Dirs are host directories the guest sees as preopened directories.
	// Files can change between two executions of an operation, and writes
	// are side effects the host neither orders nor undoes: an aborted or
	// failed operation's writes stay, and a re-executed one writes again.
	// Each file operation is a WASI call and a system call. No path a
	// guest names resolves outside its directory, whatever symbolic links
	// the directory holds (abi/ABI.md section 6).
	Dirs []Dir
}

// Dir is a host directory granted to guests.
type Dir struct {
	// Host is the directory on the host. It must exist when the engine is
	// made.
	Host string
	// Guest is the absolute path the guest opens it as, "/data" for
	// instance; paths outside every granted directory do not exist for the
	// guest.
	Guest string
	// Writable lets the guest create, write, rename and delete files in it;
	// by default the guest may only read.
	Writable bool
}

// clone returns a copy of g that shares nothing with it.
func (g Grants) clone() Grants {
	if g.Env != nil {
		g.Env = maps.Clone(g.Env)
	}
	g.Dirs = slices.Clone(g.Dirs)
	return g
}

// envList returns the granted environment as names and values, sorted by
// name, so that every instance sees the same environment in the same order.
func (g Grants) envList() (names, values []string) {
	names = slices.Sorted(maps.Keys(g.Env))
	values = make([]string, len(names))
	for i, k := range names {
		values[i] = g.Env[k]
	}
	return names, values
}

// validate checks the grants, naming the one at fault.
func (g Grants) validate() error {
	for k, v := range g.Env {
		switch {
		case k == "":
			return errors.New("runtime: granted environment variable with an empty name")
		case strings.ContainsAny(k, "=\x00"):
			return fmt.Errorf("runtime: granted environment variable %q: a name may hold neither '=' nor NUL", k)
		case strings.ContainsRune(v, 0):
			return fmt.Errorf("runtime: granted environment variable %q: its value holds a NUL byte", k)
		}
	}
	seen := make(map[string]bool, len(g.Dirs))
	for _, d := range g.Dirs {
		switch {
		case d.Host == "":
			return fmt.Errorf("runtime: granted directory %q has no host directory", d.Guest)
		case !path.IsAbs(d.Guest) || path.Clean(d.Guest) != d.Guest:
			return fmt.Errorf("runtime: granted directory %s: guest path %q is not a clean absolute path such as /data", d.Host, d.Guest)
		case seen[d.Guest]:
			return fmt.Errorf("runtime: granted directory %s: guest path %q is granted twice", d.Host, d.Guest)
		}
		seen[d.Guest] = true
		fi, err := os.Stat(d.Host)
		if err != nil {
			return fmt.Errorf("runtime: granted directory %s (guest %s): %w", d.Host, d.Guest, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("runtime: granted directory %s (guest %s) is not a directory", d.Host, d.Guest)
		}
	}
	return nil
}

// guestEnv is the clocks and random source of one instance, read by the
// engine's WASI functions. The goroutine calling the instance sets it
// (SetCallEnv) and the guest reads it during the calls, on that goroutine:
// it needs no lock.
type guestEnv struct {
	wallClock, entropy bool
	start              time.Time // instance creation, for the real monotonic clock

	time   int64 // the realtime reading
	slept  int64 // what the guest slept since SetCallEnv
	rng    randomStream
	seeder Seeder // the CallEnv's, until the guest reads random bytes; then nil
}

func newGuestEnv(g *Grants) *guestEnv {
	e := &guestEnv{wallClock: g.WallClock, entropy: g.Entropy, start: time.Now()}
	e.set(CallEnv{})
	return e
}

// set starts a new CallEnv.
func (e *guestEnv) set(env CallEnv) {
	e.time = max(env.Time, 0)
	e.slept = 0
	e.seeder = env.Seeder
	if env.Seeder == nil {
		e.rng.seed(env.Seed)
	}
}

// walltime is the realtime clock, in nanoseconds since the Unix epoch.
func (e *guestEnv) walltime() int64 {
	if e.wallClock {
		return time.Now().UnixNano()
	}
	return e.time
}

// walltimeParts is walltime as wazero's sys.Walltime wants it.
func (e *guestEnv) walltimeParts() (sec int64, nsec int32) {
	t := e.walltime()
	return t / int64(time.Second), int32(t % int64(time.Second))
}

// nanotime is the monotonic clock.
func (e *guestEnv) nanotime() int64 {
	if e.wallClock {
		return MonotonicOrigin + int64(time.Since(e.start))
	}
	return MonotonicOrigin + e.slept
}

// sleep is a guest's sleep of ns nanoseconds: real with the wall clock
// granted, else an advance of the monotonic clock.
func (e *guestEnv) sleep(ns int64) {
	if ns <= 0 {
		return
	}
	if e.wallClock {
		time.Sleep(time.Duration(ns))
		return
	}
	if e.slept > math.MaxInt64-MonotonicOrigin-ns {
		e.slept = math.MaxInt64 - MonotonicOrigin // saturate rather than wrap
		return
	}
	e.slept += ns
}

// Read fills p with the random stream of the CallEnv, or with the host's
// entropy when granted. It never fails.
func (e *guestEnv) Read(p []byte) (int, error) {
	if e.entropy {
		return cryptorand.Read(p)
	}
	if e.seeder != nil {
		e.rng.seed(e.seeder.Seed())
		e.seeder = nil
	}
	return e.rng.Read(p)
}
