package workload

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"

	"github.com/sluicehq/sluice/txn/apps/internal/zipf"
)

// App is a workload: the tables an application's operator uses, their
// initial contents, and its stream of events. An App is immutable and safe
// for concurrent use.
type App interface {
	// Name returns the application's short name: sl, gs, ngs, tp or ob.
	Name() string
	// Tables returns the names of the tables, in the order of the table
	// indices Initial uses and the events refer to.
	Tables() []string
	// Initial calls fn with every initial entry of every table, table by
	// table, keys in increasing order. key and value are valid only during
	// the call: fn copies what it keeps. An error from fn stops Initial,
	// which returns it.
	Initial(fn func(table int, key, value []byte) error) error
	// Event appends the record of event i (counting from 0) to dst, its
	// key then its value, and returns both. The key is a state key the
	// event touches (see the package documentation); the value is the
	// event in its application's encoding. key's capacity ends where value
	// begins; value's capacity runs to the end of the buffer, so a caller
	// filling one buffer with many events continues at value[len(value):].
	// Event i depends only on the knobs and i.
	Event(i uint64, dst []byte) (key, value []byte)
}

// Application names.
const (
	StreamingLedger = "sl"
	GrepSum         = "gs"
	NonGrepSum      = "ngs"
	TollProcessing  = "tp"
	OnlineBidding   = "ob"
)

// Apps returns the names of the applications.
func Apps() []string {
	return []string{StreamingLedger, GrepSum, NonGrepSum, TollProcessing, OnlineBidding}
}

// ErrUnknownApp is wrapped by the error of New, Defaults and AppKnobs for
// a name that is not an application.
var ErrUnknownApp = errors.New("unknown application")

func unknownApp(app string) error {
	return fmt.Errorf("workload: %w %q (want one of %s)", ErrUnknownApp, app, strings.Join(Apps(), ", "))
}

// Defaults returns MorphStream's settings of an application's knobs, taken
// from its code and experiment scripts (the package documentation cites
// each). Knobs the application does not read are zero, except TxnLength,
// 1, so that the result passes Validate. Seed is 0.
func Defaults(app string) (Knobs, error) {
	switch app {
	case StreamingLedger:
		return Knobs{Keys: 115_200, Skew: 0.25, DepositRatio: 0.25, TxnLength: 1}, nil
	case GrepSum:
		return Knobs{Keys: 12_288, TxnLength: 1, Reads: 1, MultiReadRatio: 1, Acyclic: true}, nil
	case NonGrepSum:
		return Knobs{Keys: 122_880, TxnLength: 1, Reads: 4, MultiReadRatio: 1, NonDetRatio: 0.0095}, nil
	case TollProcessing:
		return Knobs{Keys: 495_120, Skew: 0.2, TxnLength: 1}, nil
	case OnlineBidding:
		return Knobs{Keys: 100_000, Skew: 0.2, TxnLength: 20, BuyRatio: 0.25}, nil
	}
	return Knobs{}, unknownApp(app)
}

// AppKnobs returns the names of the knobs an application reads.
func AppKnobs(app string) ([]string, error) {
	common := []string{"keys", "skew", "abort-ratio", "busy-ns", "seed"}
	switch app {
	case StreamingLedger:
		return append(common, "deposit-ratio"), nil
	case GrepSum:
		return append(common, "txn-length", "reads", "multi-read-ratio", "acyclic"), nil
	case NonGrepSum:
		return append(common, "txn-length", "reads", "multi-read-ratio", "acyclic", "nondet-ratio"), nil
	case TollProcessing:
		return common, nil
	case OnlineBidding:
		return append(common, "txn-length", "buy-ratio"), nil
	}
	return nil, unknownApp(app)
}

// New returns the workload of an application with the given knobs, after
// checking those it reads (AppKnobs) as Knobs.Validate does; it ignores the
// others. It builds the Zipf table of the keys: O(Keys) time and 8 bytes
// per key when Skew > 0.
func New(app string, k Knobs) (App, error) {
	names, err := AppKnobs(app)
	if err != nil {
		return nil, err
	}
	if err := k.validate(names); err != nil {
		return nil, err
	}
	b := base{
		keys:  zipf.NewAlias(k.Keys, k.Skew),
		n:     uint64(k.Keys),
		abort: newChance(k.AbortRatio),
		busy:  uint32(k.BusyNanos),
		seed:  k.Seed,
	}
	switch app {
	case StreamingLedger:
		return &ledgerApp{base: b.salted(1), deposit: newChance(k.DepositRatio)}, nil
	case GrepSum, NonGrepSum:
		g := &grepApp{
			base:    b.salted(2),
			ops:     k.TxnLength,
			reads:   k.Reads,
			multi:   newChance(k.MultiReadRatio),
			acyclic: k.Acyclic,
		}
		if app == NonGrepSum {
			g.base = b.salted(3)
			g.nonDet = newChance(k.NonDetRatio)
			g.ngs = true
		}
		return g, nil
	case TollProcessing:
		return &tollApp{base: b.salted(4)}, nil
	case OnlineBidding:
		return &biddingApp{base: b.salted(5), items: k.TxnLength, buy: newChance(k.BuyRatio)}, nil
	}
	return nil, unknownApp(app)
}

// base is what every application shares: the key distribution, the abort
// chance, the busy work, and the per-event generators.
type base struct {
	keys  *zipf.Alias
	n     uint64 // number of keys
	abort chance
	busy  uint32
	seed  uint64 // the knob's seed mixed with the application's salt
}

// salted returns b with its seed mixed with an application's salt, so that
// two applications with the same seed draw unrelated streams.
func (b base) salted(salt uint64) base {
	b.seed = mix(b.seed ^ mix(salt))
	return b
}

// rand returns the generator of event i: a PCG seeded from the seed and i,
// both scrambled, so consecutive events draw unrelated numbers.
func (b *base) rand(i uint64) rand.PCG {
	var r rand.PCG
	r.Seed(b.seed, mix(i))
	return r
}

// key draws a key.
func (b *base) key(r *rand.PCG) uint32 { return b.keys.Draw(r.Uint64()) }

// other draws a key other than k (the destination of a transfer): from the
// key distribution while it returns k, up to 8 times, then uniformly among
// the others.
func (b *base) other(r *rand.PCG, k uint32) uint32 {
	for range 8 {
		if d := b.key(r); d != k {
			return d
		}
	}
	return uint32((uint64(k) + 1 + uniform(r.Uint64(), b.n-1)) % b.n)
}

// uniform maps 64 random bits to [0, n).
func uniform(u, n uint64) uint64 {
	hi, _ := bits.Mul64(u, n)
	return hi
}

// mix is SplitMix64's finalizer: a bijection that scatters nearby inputs.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// chance is a probability as a threshold on 64 random bits.
type chance struct {
	thr    uint64
	always bool
}

func newChance(p float64) chance {
	f := p * (1 << 64)
	switch {
	case p <= 0:
		return chance{}
	case p >= 1 || f >= math.MaxUint64:
		return chance{always: true}
	}
	return chance{thr: uint64(f)}
}

// hit draws the event: true with the chance's probability.
func (c chance) hit(u uint64) bool { return c.always || u < c.thr }

// record returns the key and value appended to dst since start (key) and
// mid (value), with the capacities App.Event documents.
func record(dst []byte, start, mid int) (key, value []byte) {
	return dst[start:mid:mid], dst[mid:]
}
