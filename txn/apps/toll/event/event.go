package event

import (
	"math/bits"

	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// Tag is the first byte of every Toll Processing event (format v1).
const Tag byte = 'T'

// Table indices and names, in the order the workload declares them.
const (
	Speeds      = 0
	Counts      = 1
	SpeedsTable = "segment_speed"
	CountsTable = "segment_count"
)

// Speeds, in the units of Linear Road (miles per hour), after MorphStream's
// TP loader.
const (
	// MinSpeed and MaxSpeed bound the speeds the generator draws for valid
	// reports.
	MinSpeed = 60
	MaxSpeed = 180
	// InvalidSpeed is the speed of a report drawn to abort.
	InvalidSpeed = 200
)

// Vehicles is the size of the vehicle population: vehicle ids are in
// [0, Vehicles), and a VehicleSet has one bit per vehicle.
const Vehicles = 128

// KeyWidth is the number of decimal digits of a key.
const KeyWidth = wire.KeyWidth

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = wire.ErrMalformed

// FieldError is the error a decoder returns: it names the field at fault.
type FieldError = wire.FieldError

// Event is one position report.
type Event struct {
	Segment uint32
	// Vehicle is in [0, Vehicles).
	Vehicle uint32
	// Speed is valid up to MaxSpeed.
	Speed uint32
	// BusyNanos is the busy work each operation does, in nanoseconds.
	BusyNanos uint32
}

// Valid reports whether the report may commit: its speed is at most
// MaxSpeed.
func (e *Event) Valid() bool { return e.Speed <= MaxSpeed }

// AppendEvent appends the encoding of e to dst.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = append(dst, Tag)
	dst = wire.AppendUvarint(dst, uint64(e.Segment))
	dst = wire.AppendUvarint(dst, uint64(e.Vehicle))
	dst = wire.AppendUvarint(dst, uint64(e.Speed))
	return wire.AppendUvarint(dst, uint64(e.BusyNanos))
}

// DecodeEvent decodes an event written by AppendEvent. A malformed input,
// or a vehicle outside [0, Vehicles), fails with a *FieldError naming the
// field.
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	r := wire.NewReader("toll event", b)
	r.Tag(Tag, "a Toll Processing event")
	e.Segment = r.Uvarint32("segment", wire.MaxKeys-1)
	e.Vehicle = r.Uvarint32("vehicle", Vehicles-1)
	e.Speed = r.Uvarint32("speed", 1<<32-1)
	e.BusyNanos = r.Uvarint32("busy-ns", 1<<32-1)
	if err := r.Err(); err != nil {
		return Event{}, err
	}
	return e, nil
}

// AppendKey appends the key of segment k: k in KeyWidth decimal digits.
func AppendKey(dst []byte, k uint32) []byte { return wire.AppendKey(dst, k) }

// ParseKey parses a key written by AppendKey.
func ParseKey(b []byte) (uint32, bool) { return wire.ParseKey(b) }

// SpeedStats is a segment's value in Speeds.
type SpeedStats struct {
	// Sum is the sum of the valid speeds reported.
	Sum uint64
	// Count is the number of valid reports.
	Count uint64
}

// Add records a speed.
func (s *SpeedStats) Add(speed uint32) {
	s.Sum += uint64(speed)
	s.Count++
}

// Average returns Sum/Count, or 0 before the first report.
func (s SpeedStats) Average() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.Count)
}

// AppendSpeedStats appends s: Sum then Count, 8 bytes each, little endian.
func AppendSpeedStats(dst []byte, s SpeedStats) []byte {
	return wire.AppendUint64(wire.AppendUint64(dst, s.Sum), s.Count)
}

// DecodeSpeedStats decodes a SpeedStats. An empty value is the zero
// SpeedStats; any other length than 16 fails with a *FieldError.
func DecodeSpeedStats(b []byte) (SpeedStats, error) {
	var w [2]uint64
	err := wire.Fixed("toll segment speed", "speed stats", b, w[:])
	return SpeedStats{Sum: w[0], Count: w[1]}, err
}

// VehicleSet is a segment's value in Counts: bit v of word v/64 is set
// when vehicle v was seen.
type VehicleSet [Vehicles / 64]uint64

// Add adds vehicle v, which must be below Vehicles (DecodeEvent checks
// it); a higher id panics with an index out of range.
func (s *VehicleSet) Add(v uint32) { s[v/64] |= 1 << (v % 64) }

// Has reports whether vehicle v was seen.
func (s *VehicleSet) Has(v uint32) bool {
	return v < Vehicles && s[v/64]&(1<<(v%64)) != 0
}

// Count returns the number of distinct vehicles seen.
func (s *VehicleSet) Count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// AppendVehicleSet appends s: its words in order, 8 bytes each, little
// endian.
func AppendVehicleSet(dst []byte, s *VehicleSet) []byte {
	for _, w := range s {
		dst = wire.AppendUint64(dst, w)
	}
	return dst
}

// DecodeVehicleSet decodes a VehicleSet. An empty value is the empty set;
// any other length than 16 fails with a *FieldError.
func DecodeVehicleSet(b []byte) (VehicleSet, error) {
	var s VehicleSet
	err := wire.Fixed("toll segment count", "vehicle set", b, s[:])
	return s, err
}
