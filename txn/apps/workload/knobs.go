package workload

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// Knobs are the parameters of a workload, MorphStream's knobs. Not every
// knob applies to every application: AppKnobs lists those an application
// reads, and New ignores the others. Ratios are fractions in [0, 1].
type Knobs struct {
	// Keys is the size of each table's key space (accounts, GrepSum keys,
	// road segments, items), in [2, 100,000,000]. Knob "keys".
	Keys int
	// Skew is the Zipf θ of key access, at least 0 (0: uniform; MorphStream's
	// --key_skewness is 100θ). Knob "skew".
	Skew float64
	// AbortRatio is the fraction of transactions drawn to abort (SL: of
	// transfers; OB: of buys; GS, NGS, TP: of all events). Knob "abort-ratio".
	AbortRatio float64
	// TxnLength is the number of operations of a GrepSum or NonGrepSum
	// transaction and of items of an Online Bidding event, in [1, 1024].
	// Knob "txn-length".
	TxnLength int
	// MultiReadRatio is the fraction of GrepSum operations that read Reads
	// keys; the others read none. Knob "multi-read-ratio".
	MultiReadRatio float64
	// Reads is the number of keys a multi-read operation reads besides the
	// key it writes, in [0, 64] (MorphStream's NUM_ACCESS counts the
	// written key too: Reads = NUM_ACCESS - 1). Knob "reads".
	Reads int
	// DepositRatio is the fraction of Streaming Ledger events that are
	// deposits. Knob "deposit-ratio".
	DepositRatio float64
	// BuyRatio is the fraction of Online Bidding events that are buys; the
	// others are alerts and top-ups, half and half. Knob "buy-ratio".
	BuyRatio float64
	// BusyNanos is the busy work of each operation in nanoseconds, in
	// [0, 1e9], carried in every event (MorphStream's --complexity).
	// Knob "busy-ns".
	BusyNanos int
	// NonDetRatio is the fraction of NonGrepSum operations that are
	// non-deterministic. Knob "nondet-ratio".
	NonDetRatio float64
	// Acyclic makes GrepSum and NonGrepSum read only keys below the key
	// written, so that no cycle joins the per-key chains (MorphStream's
	// --isCyclic 0). Knob "acyclic".
	Acyclic bool
	// Seed selects the stream of events and the initial state.
	// Knob "seed".
	Seed uint64
}

// Limits of the knobs.
const (
	MinKeys      = 2
	MaxKeys      = wire.MaxKeys
	MaxSkew      = 10
	MaxTxnLength = 1024
	MaxReads     = 64
	MaxBusyNanos = 1_000_000_000
)

// KnobNames returns the names of the knobs, in the order of Knobs' fields.
func KnobNames() []string {
	return []string{
		"keys", "skew", "abort-ratio", "txn-length", "multi-read-ratio", "reads",
		"deposit-ratio", "buy-ratio", "busy-ns", "nondet-ratio", "acyclic", "seed",
	}
}

// ErrUnknownKnob is wrapped by the error of Set and Get for a name that is
// not a knob.
var ErrUnknownKnob = errors.New("unknown knob")

// ErrBadKnob is wrapped by the error of a knob value that does not parse
// or is out of range.
var ErrBadKnob = errors.New("bad knob value")

// KnobError reports a knob that cannot be set: its name, the value given
// and why. It wraps ErrUnknownKnob or ErrBadKnob.
type KnobError struct {
	Name   string
	Value  string
	Reason string
	err    error
}

// Error formats the error as `workload: knob "skew" = "x": not a number`.
func (e *KnobError) Error() string {
	return "workload: knob " + strconv.Quote(e.Name) + " = " + strconv.Quote(e.Value) + ": " + e.Reason
}

// Unwrap returns ErrUnknownKnob or ErrBadKnob.
func (e *KnobError) Unwrap() error { return e.err }

func badKnob(name, value, reason string) error {
	return &KnobError{Name: name, Value: value, Reason: reason, err: ErrBadKnob}
}

// Set sets the knob called name from its text: an integer for keys,
// txn-length, reads, busy-ns and seed; a number for skew; a fraction
// ("0.25") or a percentage ("25%") for the ratios; a boolean for acyclic.
// The value is checked against the knob's range. On error the knobs are
// unchanged and the *KnobError names the knob and the value.
func (k *Knobs) Set(name, value string) error {
	v := strings.TrimSpace(value)
	switch name {
	case "keys":
		return setInt(&k.Keys, name, v, MinKeys, MaxKeys)
	case "skew":
		f, err := parseFloat(name, v)
		if err != nil {
			return err
		}
		if f < 0 || f > MaxSkew {
			return badKnob(name, value, "want a Zipf θ in [0, "+strconv.Itoa(MaxSkew)+"]")
		}
		k.Skew = f
		return nil
	case "abort-ratio":
		return setRatio(&k.AbortRatio, name, v)
	case "txn-length":
		return setInt(&k.TxnLength, name, v, 1, MaxTxnLength)
	case "multi-read-ratio":
		return setRatio(&k.MultiReadRatio, name, v)
	case "reads":
		return setInt(&k.Reads, name, v, 0, MaxReads)
	case "deposit-ratio":
		return setRatio(&k.DepositRatio, name, v)
	case "buy-ratio":
		return setRatio(&k.BuyRatio, name, v)
	case "busy-ns":
		return setInt(&k.BusyNanos, name, v, 0, MaxBusyNanos)
	case "nondet-ratio":
		return setRatio(&k.NonDetRatio, name, v)
	case "acyclic":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return badKnob(name, value, "want true or false")
		}
		k.Acyclic = b
		return nil
	case "seed":
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return badKnob(name, value, "want an unsigned 64-bit integer")
		}
		k.Seed = s
		return nil
	}
	return &KnobError{Name: name, Value: value,
		Reason: "no such knob (want one of " + strings.Join(KnobNames(), ", ") + ")", err: ErrUnknownKnob}
}

// Get returns the knob called name as text that Set accepts.
func (k *Knobs) Get(name string) (string, error) {
	ratio := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch name {
	case "keys":
		return strconv.Itoa(k.Keys), nil
	case "skew":
		return ratio(k.Skew), nil
	case "abort-ratio":
		return ratio(k.AbortRatio), nil
	case "txn-length":
		return strconv.Itoa(k.TxnLength), nil
	case "multi-read-ratio":
		return ratio(k.MultiReadRatio), nil
	case "reads":
		return strconv.Itoa(k.Reads), nil
	case "deposit-ratio":
		return ratio(k.DepositRatio), nil
	case "buy-ratio":
		return ratio(k.BuyRatio), nil
	case "busy-ns":
		return strconv.Itoa(k.BusyNanos), nil
	case "nondet-ratio":
		return ratio(k.NonDetRatio), nil
	case "acyclic":
		return strconv.FormatBool(k.Acyclic), nil
	case "seed":
		return strconv.FormatUint(k.Seed, 10), nil
	}
	return "", &KnobError{Name: name, Reason: "no such knob", err: ErrUnknownKnob}
}

// Validate checks every knob against its range, as Set does (Get's text
// parses back to the same value), and returns the first failure. New
// checks the knobs its application reads the same way, so knobs built by
// hand are checked too.
func (k *Knobs) Validate() error { return k.validate(KnobNames()) }

// validate checks the named knobs.
func (k *Knobs) validate(names []string) error {
	for _, name := range names {
		v, _ := k.Get(name)
		var probe Knobs
		if err := probe.Set(name, v); err != nil {
			return err
		}
	}
	return nil
}

func setInt(dst *int, name, v string, lo, hi int) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < int64(lo) || n > int64(hi) {
		return badKnob(name, v, "want an integer in ["+strconv.Itoa(lo)+", "+strconv.Itoa(hi)+"]")
	}
	*dst = int(n)
	return nil
}

func parseFloat(name, v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, badKnob(name, v, "not a finite number")
	}
	return f, nil
}

// setRatio parses a fraction in [0, 1] or a percentage in [0%, 100%].
func setRatio(dst *float64, name, v string) error {
	pct := strings.HasSuffix(v, "%")
	f, err := parseFloat(name, strings.TrimSuffix(v, "%"))
	if err != nil {
		return badKnob(name, v, "want a fraction in [0, 1] or a percentage")
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return badKnob(name, v, "want a fraction in [0, 1] or a percentage in [0%, 100%]")
	}
	*dst = f
	return nil
}
