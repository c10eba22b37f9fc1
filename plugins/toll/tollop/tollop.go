package tollop

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/plugins/internal/busy"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn/apps/toll/event"
)

// Functions, by index in the operator's Funcs.
const (
	// FnSpeed adds a valid report's speed to the segment's statistics.
	FnSpeed = iota
	// FnVehicle adds a valid report's vehicle to the segment's set.
	FnVehicle
)

// Table handles: the workload's order, in which a pipeline declares the
// operator's tables.
const (
	speeds sluice.Table = event.Speeds
	counts sluice.Table = event.Counts
)

// argSize is the size of an operation's argument: the speed, the vehicle
// and the busy work in nanoseconds, uint32 little endian each.
const argSize = 3 * 4

// New returns the Toll Processing operator. The value serves one operator
// instance (one plugin instance, or one hosttest.TxnLogic): Post reuses
// a buffer it keeps.
func New() sluice.Txn {
	o := &operator{}
	return sluice.Txn{
		Plan:  plan,
		Funcs: []sluice.TxnFunc{FnSpeed: addSpeed, FnVehicle: addVehicle},
		Post:  o.post,
	}
}

// operator is the state of one instance's Post.
type operator struct{ out []byte }

func plan(ev sluice.Record, p *sluice.Planner) error {
	e, err := event.DecodeEvent(ev.Value)
	if err != nil {
		return nil // no operations: Post dead-letters the event
	}
	var arg [argSize]byte
	binary.LittleEndian.PutUint32(arg[:], e.Speed)
	binary.LittleEndian.PutUint32(arg[4:], e.Vehicle)
	binary.LittleEndian.PutUint32(arg[8:], e.BusyNanos)
	var k [event.KeyWidth]byte
	seg := event.AppendKey(k[:0], e.Segment)
	p.Write(speeds, seg, FnSpeed, arg[:])
	p.Write(counts, seg, FnVehicle, arg[:])
	return nil
}

// report decodes an operation's argument, does its busy work, and tells
// whether the report is valid.
func report(c *sluice.Call) (e event.Event, valid bool, err error) {
	a := c.Arg()
	if len(a) != argSize {
		return e, false, fmt.Errorf("toll: operation on segment %q: argument of %d bytes, want %d", c.Key(), len(a), argSize)
	}
	e.Speed, e.Vehicle = binary.LittleEndian.Uint32(a), binary.LittleEndian.Uint32(a[4:])
	_ = busy.Spin(binary.LittleEndian.Uint32(a[8:]))
	if e.Vehicle >= event.Vehicles {
		return e, false, fmt.Errorf("toll: operation on segment %q: vehicle %d, want one below %d", c.Key(), e.Vehicle, event.Vehicles)
	}
	return e, e.Valid(), nil
}

func addSpeed(c *sluice.Call) sluice.Effect {
	e, valid, err := report(c)
	switch {
	case err != nil:
		return sluice.Fail(err)
	case !valid:
		return sluice.Abort()
	}
	own, _ := c.Own()
	s, err := event.DecodeSpeedStats(own)
	if err != nil {
		return sluice.Fail(fmt.Errorf("toll: segment %q: %w", c.Key(), err))
	}
	s.Add(e.Speed)
	return sluice.Write(event.AppendSpeedStats(c.Scratch(16)[:0], s))
}

func addVehicle(c *sluice.Call) sluice.Effect {
	e, valid, err := report(c)
	switch {
	case err != nil:
		return sluice.Fail(err)
	case !valid:
		return sluice.Abort()
	}
	own, _ := c.Own()
	s, err := event.DecodeVehicleSet(own)
	if err != nil {
		return sluice.Fail(fmt.Errorf("toll: segment %q: %w", c.Key(), err))
	}
	s.Add(e.Vehicle)
	return sluice.Write(event.AppendVehicleSet(c.Scratch(16)[:0], &s))
}

// post emits the event's Result: the segment's statistics after a
// committed report, computed from what its operations read.
func (o *operator) post(ev sluice.Record, oc *sluice.Outcome, out *sluice.Emitter) error {
	e, err := event.DecodeEvent(ev.Value)
	if err != nil {
		return err
	}
	r := Result{Committed: oc.Committed}
	if oc.Committed {
		if len(oc.Ops) != 2 {
			return fmt.Errorf("toll: outcome of %d operations, want 2", len(oc.Ops))
		}
		s, err := event.DecodeSpeedStats(oc.Ops[0].Own.Bytes)
		if err != nil {
			return err
		}
		v, err := event.DecodeVehicleSet(oc.Ops[1].Own.Bytes)
		if err != nil {
			return err
		}
		s.Add(e.Speed)
		v.Add(e.Vehicle)
		r.Average, r.Vehicles = s.Average(), v.Count()
	}
	o.out = AppendResult(o.out[:0], &r)
	out.Emit(sluice.Record{Key: ev.Key, Value: o.out, Time: ev.Time})
	return nil
}
