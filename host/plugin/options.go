package plugin

import (
	"log/slog"

	"github.com/sluicehq/sluice/abi"
)

// Limits bound what one guest call may hand the host. A zero field takes its
// default.
type Limits struct {
	// MaxRecordBytes bounds the bytes one output record carries: its key,
	// value and headers (abi.DataSize), the measure a user counts, without
	// the encoding's framing. Default and upper bound: abi.MaxRecordSize.
	MaxRecordBytes int
	// MaxOutputBytes bounds the bytes a guest call may make the host keep:
	// what it passes to emit, and in a transactional operator the
	// declarations of txn_plan and the keys and values txn_get, txn_put and
	// txn_delete copy, all of the call's host calls together. Default
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
}

// DefaultMaxOutputBytes is the default of Limits.MaxOutputBytes: as much as a
// guest's default memory (64 MiB).
const DefaultMaxOutputBytes = 64 << 20

// DefaultLimits returns the limits used when none are given.
func DefaultLimits() Limits {
	return Limits{MaxRecordBytes: abi.MaxRecordSize, MaxOutputBytes: DefaultMaxOutputBytes}
}

// withDefaults fills zero fields and clamps MaxRecordBytes to the ABI bound.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxRecordBytes <= 0 || l.MaxRecordBytes > abi.MaxRecordSize {
		l.MaxRecordBytes = d.MaxRecordBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	return l
}

// Option changes how Load prepares a plugin.
type Option func(*options)

type options struct {
	limits Limits
	logger *slog.Logger
	tables []string
}

// WithLimits sets the limits every instance of the plugin enforces; zero
// fields keep their defaults.
func WithLimits(l Limits) Option { return func(o *options) { o.limits = l } }

// WithLogger sets the logger guest log messages go to (default
// slog.Default()). The plugin adds its name and kind as attributes.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithTables names the state tables of a transactional operator, in
// handle order: table_id answers a name's index in tables. (A keyed
// operator's tables are resolved by its State.)
func WithTables(tables []string) Option {
	return func(o *options) { o.tables = append([]string(nil), tables...) }
}

func buildOptions(opts []Option) options {
	o := options{}
	for _, f := range opts {
		f(&o)
	}
	o.limits = o.limits.withDefaults()
	if o.logger == nil {
		o.logger = slog.Default()
	}
	return o
}
