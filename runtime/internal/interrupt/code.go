package interrupt

import (
	"fmt"
	"slices"
)

// Opcodes the instrumenter looks at; the rest are only skipped.
const (
	opUnreachable  = 0x00
	opBlock        = 0x02
	opLoop         = 0x03
	opIf           = 0x04
	opElse         = 0x05
	opEnd          = 0x0b
	opBr           = 0x0c
	opBrIf         = 0x0d
	opBrTable      = 0x0e
	opReturn       = 0x0f
	opCall         = 0x10
	opCallIndirect = 0x11
	opDrop         = 0x1a
	opSelectT      = 0x1c
	opLocalGet     = 0x20
	opLocalSet     = 0x21
	opLocalTee     = 0x22
	opGlobalGet    = 0x23
	opGlobalSet    = 0x24
	opI32Const     = 0x41
	opF32Const     = 0x43
	opF64Const     = 0x44
	opI32Eqz       = 0x45
	opI32Add       = 0x6a
	opI32Sub       = 0x6b
	opI32And       = 0x71
	opRefNull      = 0xd0
	opRefFunc      = 0xd2
	prefixMisc     = 0xfc
	prefixSIMD     = 0xfd
	prefixAtomic   = 0xfe

	blockEmpty = 0x40
	funcRef    = 0x70

	miscTableGrow = 0x0f
	miscTableSize = 0x10

	opI64Const      = 0x42
	opI64GtU        = 0x56
	opI64Add        = 0x7c
	opI64ExtendI32U = 0xad
)

// valueType reports whether b is a value type the instrumenter knows: the
// numeric types, v128, funcref and externref. The typed references of the GC
// and function-references proposals take more bytes and are refused.
func valueType(b byte) bool {
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

// The checks. Every so many checks, a guest yields to the embedder and
// tests the flag. The yield is what lets the Go runtime stop the goroutine
// running the guest (compiled code cannot be preempted), and the flag is
// tested only then:
//
//	ref.null func
//	i32.const 0
//	table.grow $yield   ;; grows nothing, but leaves the compiled code
//	drop
//	global.get $flag
//	if
//	  unreachable
//	end
//
// A loop counts its iterations in a local of its function, $n, a register
// once compiled, and yields every Interval of them. Its check is a branch
// out of the loop to the yield, which then branches back to the header;
// the loop itself then holds no call and no if, which would make the
// compiler keep the loop's values on the stack and add jumps:
//
//	block $after (type of the loop)
//	  loop $again (type of the loop)
//	    block $yield
//	      loop $l (type of the loop)     ;; the original loop
//	        local.get $n
//	        i32.const 1
//	        i32.add
//	        local.tee $n
//	        i32.const Interval-1
//	        i32.and
//	        i32.eqz
//	        br_if $yield
//	        ...                          ;; the original body
//	      end
//	      br $after
//	    end
//	    yield
//	    br $again
//	  end
//	end
//
// Branches from inside the loop to labels outside it pass three more
// labels, and their depths are adjusted. A loop with parameters cannot be
// wrapped so (the branch to $yield would have to carry them): it gets the
// count and the yield inline, in a block.
//
// A function that calls others also counts its calls, in a global,
// $calls: a loop count starts afresh at each call, and a recursion without
// long loops (a fib) would otherwise never yield. When the function is
// sure to reach a loop header first (it opens with straight-line code,
// blocks and calls, then a loop, as every function of a Go guest does), its
// entry sets the loop count to -1 every Interval calls, so that its first
// loop check yields, and to 0 otherwise; straight-line code, without the
// branch and the call of a check, which cost a Go guest a few percent more:
//
//	global.get $calls
//	i32.const 1
//	i32.add
//	global.set $calls
//	i32.const 0
//	global.get $calls
//	i32.const Interval-1
//	i32.and
//	i32.eqz
//	i32.sub
//	local.set $n
//
// Any other function that calls gets the whole check at its entry:
//
//	block
//	  global.get $calls
//	  i32.const 1
//	  i32.add
//	  global.set $calls
//	  global.get $calls
//	  i32.const Interval-1
//	  i32.and
//	  br_if 0
//	  yield
//	end

// code holds the instruction sequences of one instrumented module.
type code struct {
	deadline bool     // insert the checks; without, only table.grow changes
	threads  bool     // thread jumps through dispatches (Options.ThreadJumps)
	grow     *growers // bounds table.grow, or nil
	calls    uint32   // the call count global
	yield    []byte   // the yield and flag test
	entry    []byte   // the check at the entry of a function that calls and has no loop first
	trailer  []byte   // from the end of a wrapped loop to the end of $after
}

func newCode(g globals) *code {
	c := &code{deadline: true, calls: g.calls}
	c.yield = append(c.yield, opRefNull, funcRef, opI32Const, 0, prefixMisc, miscTableGrow)
	c.yield = appendULEB(c.yield, uint64(g.table))
	c.yield = append(c.yield, opDrop)
	c.yield = appendULEB(append(c.yield, opGlobalGet), uint64(g.flag))
	c.yield = append(c.yield, opIf, blockEmpty, opUnreachable, opEnd)

	c.entry = append(c.entry, opBlock, blockEmpty)
	c.entry = appendULEB(append(c.entry, opGlobalGet), uint64(g.calls))
	c.entry = append(c.entry, opI32Const, 1, opI32Add)
	c.entry = appendULEB(append(c.entry, opGlobalSet), uint64(g.calls))
	c.entry = appendULEB(append(c.entry, opGlobalGet), uint64(g.calls))
	c.entry = appendSLEB(append(c.entry, opI32Const), Interval-1)
	c.entry = append(c.entry, opI32And, opBrIf, 0)
	c.entry = append(append(c.entry, c.yield...), opEnd)

	c.trailer = append(c.trailer, opBr, 2, opEnd) // to $after; end of $yield
	c.trailer = append(append(c.trailer, c.yield...), opBr, 0, opEnd, opEnd)
	return c
}

// appendSeed appends the entry of a function whose loop comes first: it
// counts the call and seeds the loop count n.
func (c *code) appendSeed(out []byte, n uint32) []byte {
	out = appendULEB(append(out, opGlobalGet), uint64(c.calls))
	out = append(out, opI32Const, 1, opI32Add)
	out = appendULEB(append(out, opGlobalSet), uint64(c.calls))
	out = append(out, opI32Const, 0)
	out = appendULEB(append(out, opGlobalGet), uint64(c.calls))
	out = appendSLEB(append(out, opI32Const), Interval-1)
	out = append(out, opI32And, opI32Eqz, opI32Sub)
	return appendULEB(append(out, opLocalSet), uint64(n))
}

// appendCount appends the loop count on local n, up to a value that is
// zero every Interval iterations.
func appendCount(out []byte, n uint32) []byte {
	out = appendULEB(append(out, opLocalGet), uint64(n))
	out = append(out, opI32Const, 1, opI32Add)
	out = appendULEB(append(out, opLocalTee), uint64(n))
	out = appendSLEB(append(out, opI32Const), Interval-1)
	return append(out, opI32And)
}

// globals are the indices of what the instrumenter adds.
type globals struct {
	flag, calls uint32 // globals
	table       uint32
}

// frame is an open block, loop or if of the body being rewritten.
type frame struct {
	wrapped bool // a loop wrapped in $after, $again and $yield
	// wraps counts the wrapped loops among this frame and those around it:
	// a branch from frame i out to frame j passes 3*(wraps(i) - wraps(j))
	// more labels.
	wraps int
	// id tells frames apart: frames are numbered as they open.
	id int
	// dispatch is set on a loop that opens with a dispatch (see
	// readDispatch).
	dispatch *dispatch
}

// bodyStats says what rewriteBody inserted.
type bodyStats struct {
	loops, wrapped int
	threaded       int  // jumps that skip a dispatch (see threadJump)
	grows          int  // table.grow instructions bounded
	entry, seed    bool // an entry check, a seed of the loop count from the call count
}

// rewriteBody appends to out the function body (locals and instructions,
// up to and including the final end) with the checks inserted. params is
// the number of the function's parameters, base the body's offset in the
// module, for error messages; scratch is a buffer it may use, returned for
// the next call.
//
// A function that calls others counts its calls (see newCode). One that
// neither loops nor calls runs straight through.
func rewriteBody(out, body []byte, params uint32, base int, c *code, scratch []byte) (_, _ []byte, st bodyStats, err error) {
	r := &reader{B: body, Base: base}
	groups, err := r.U32()
	if err != nil {
		return out, scratch, st, err
	}
	first := r.Pos      // the first group of locals
	n := uint64(params) // the index of the loop counter: after every local
	for range groups {
		k, err := r.U32()
		if err != nil {
			return out, scratch, st, err
		}
		n += uint64(k)
		t, err := r.Byte()
		if err != nil {
			return out, scratch, st, err
		}
		if !valueType(t) {
			return out, scratch, st, fmt.Errorf("%w: at byte %d: local of value type 0x%02x", ErrUnsupported, base+r.Pos-1, t)
		}
	}
	if n >= 1<<32-1 || groups == 1<<32-1 {
		return out, scratch, st, r.Errorf("%d locals", n)
	}
	counter := uint32(n)
	declared := r.Pos // the local declarations end here

	// The instructions go to scratch first: whether the function needs
	// the counter and an entry check is known only at the end.
	insts := scratch[:0]
	frames := []frame{{}} // the function body is a block
	nextID := 1
	var prev, prev2 []byte // the two instructions before this one
	prefix, calls, loopFirst := true, false, false
	for len(frames) > 0 {
		start := r.Pos
		op, err := r.Byte()
		if err != nil {
			return out, insts, st, err
		}
		if err := skipInstruction(r, op); err != nil {
			return out, insts, st, err
		}
		inst := body[start:r.Pos]
		before, before2 := prev, prev2
		prev, prev2 = inst, prev
		if prefix && op != opBlock && op != opCall && op != opCallIndirect && control(op) {
			prefix, loopFirst = false, op == opLoop
		}
		top := frames[len(frames)-1]
		id := nextID
		if op == opBlock || op == opIf || op == opLoop {
			nextID++
		}
		switch op {
		case opBlock, opIf:
			frames = append(frames, frame{wraps: top.wraps, id: id})
			insts = append(insts, inst...)
		case opLoop:
			var d *dispatch
			if c.threads {
				d = readDispatch(body[r.Pos:], inst, frames, id)
			}
			if !c.deadline {
				frames = append(frames, frame{wraps: top.wraps, id: id, dispatch: d})
				insts = append(insts, inst...)
				break
			}
			st.loops++
			bt := inst[1:] // the block type
			if len(bt) == 1 && (bt[0] == blockEmpty || valueType(bt[0])) {
				st.wrapped++
				frames = append(frames, frame{wrapped: true, wraps: top.wraps + 1, id: id, dispatch: d})
				insts = append(append(insts, opBlock), bt...)
				insts = append(append(insts, opLoop), bt...)
				insts = append(insts, opBlock, blockEmpty)
				insts = append(insts, inst...)
				insts = appendCount(insts, counter)
				insts = append(insts, opI32Eqz, opBrIf, 1)
			} else {
				frames = append(frames, frame{wraps: top.wraps, id: id, dispatch: d})
				insts = append(insts, inst...)
				insts = append(insts, opBlock, blockEmpty)
				insts = appendCount(insts, counter)
				insts = append(append(insts, opBrIf, 0), c.yield...)
				insts = append(insts, opEnd)
			}
		case opEnd:
			frames = frames[:len(frames)-1]
			insts = append(insts, inst...)
			if top.wrapped {
				insts = append(insts, c.trailer...)
			}
		case opBr, opBrIf:
			l, _ := (&reader{B: inst[1:]}).U32() // read once by skipInstruction
			if op == opBr && c.threads {
				if t, ok := threadJump(l, frames, before2, before); ok {
					l = t
					st.threaded++
				}
			}
			depth, err := adjustDepth(l, frames, r)
			if err != nil {
				return out, insts, st, err
			}
			insts = appendULEB(append(insts, op), uint64(depth))
		case opBrTable:
			if insts, err = rewriteBrTable(insts, inst[1:], frames, r); err != nil {
				return out, insts, st, err
			}
		case opCall, opCallIndirect:
			calls = true
			insts = append(insts, inst...)
		case prefixMisc:
			ir := &reader{B: inst[1:]}
			if sub, _ := ir.U32(); sub != miscTableGrow || c.grow == nil { // read once by skipInstruction
				insts = append(insts, inst...)
				break
			}
			t, _ := ir.U32()
			f, err := c.grow.funcFor(t, r)
			if err != nil {
				return out, insts, st, err
			}
			// Not a call that counts: the function added neither loops
			// nor calls.
			insts = appendULEB(append(insts, opCall), uint64(f))
			st.grows++
		default:
			insts = append(insts, inst...)
		}
	}
	if !r.Done() {
		return out, insts, st, r.Errorf("%d bytes after the end of the function body", len(body)-r.Pos)
	}
	st.seed = c.deadline && calls && loopFirst
	st.entry = c.deadline && calls && !loopFirst
	if st.loops > 0 { // one more group of locals: the counter
		out = appendULEB(out, uint64(groups)+1)
		out = append(out, body[first:declared]...)
		out = append(out, 1, 0x7f)
	} else {
		out = append(out, body[:declared]...)
	}
	switch {
	case st.seed:
		out = c.appendSeed(out, counter)
	case st.entry:
		out = append(out, c.entry...)
	}
	return append(out, insts...), insts, st, nil
}

// dispatch is the jump table a loop opens with, in the form Go's
// WebAssembly code gives every function: the loop, blocks, and a br_table
// on a local,
//
//	loop $dispatch
//	  block $bN
//	    ...
//	      block $b0
//	        local.get $pc
//	        br_table $b0 ... $bN ...
//	      end
//	      ...   ;; the code of resume point 0
//	    end
//	    ...     ;; the code of resume point 1, and so on
//
// and a jump inside the function is
//
//	i32.const N
//	local.set $pc
//	br $dispatch
//
// The jump goes through the table even when its target encloses it (a
// jump forward): threadJump makes it a branch to the target.
type dispatch struct {
	local   uint32
	targets []int // the frame id of each entry, the default last
}

// readDispatch returns the dispatch that code, the instructions right after
// loop (the loop instruction, with id id, opened inside frames), opens
// with, or nil when it opens otherwise.
func readDispatch(code, loop []byte, frames []frame, id int) *dispatch {
	if len(loop) != 2 || loop[1] != blockEmpty {
		return nil
	}
	r := &reader{B: code}
	blocks := 0
	for {
		op, err := r.Byte()
		if err != nil {
			return nil
		}
		if op == opBlock {
			if bt, err := r.Byte(); err != nil || bt != blockEmpty {
				return nil
			}
			blocks++
			continue
		}
		if op != opLocalGet {
			return nil
		}
		break
	}
	local, err := r.U32()
	if err != nil {
		return nil
	}
	if op, err := r.Byte(); err != nil || op != opBrTable {
		return nil
	}
	n, err := r.U32()
	if err != nil || uint64(n) >= uint64(len(code)) {
		return nil
	}
	d := &dispatch{local: local, targets: make([]int, 0, n+1)}
	for range n + 1 {
		l, err := r.U32()
		if err != nil {
			return nil
		}
		// At the br_table, label l is the block opened blocks-l after
		// the loop, the loop, or a frame outside it.
		switch {
		case l <= uint32(blocks):
			d.targets = append(d.targets, id+blocks-int(l))
		case uint64(l)-uint64(blocks)-1 < uint64(len(frames)):
			d.targets = append(d.targets, frames[len(frames)-int(l-uint32(blocks))].id)
		default:
			return nil // invalid: the compiler will say so
		}
	}
	return d
}

// threadJump returns the label, seen from the innermost of frames, of the
// target of a jump through a dispatch (br l, after the instructions
// setPC2 and setPC: i32.const N and local.set of the dispatch's local),
// when that target encloses the jump, so that a br reaches it directly:
// the dispatch would only read the local and branch there. The local is
// set all the same. It returns false for anything else, a jump backward
// among them.
func threadJump(l uint32, frames []frame, setPC2, setPC []byte) (uint32, bool) {
	if uint64(l) >= uint64(len(frames)) || len(setPC2) < 2 || setPC2[0] != opI32Const || len(setPC) < 2 || setPC[0] != opLocalSet {
		return 0, false
	}
	d := frames[len(frames)-1-int(l)].dispatch
	if d == nil {
		return 0, false
	}
	local, err := (&reader{B: setPC[1:]}).U32()
	if err != nil || local != d.local {
		return 0, false
	}
	v, err := (&reader{B: setPC2[1:]}).SLEB(32)
	if err != nil {
		return 0, false
	}
	entry := uint64(uint32(v))
	if entry >= uint64(len(d.targets)) {
		entry = uint64(len(d.targets) - 1)
	}
	target := d.targets[entry]
	for j := len(frames) - 1; j >= 0; j-- {
		if frames[j].id == target {
			if frames[j].dispatch == d {
				return 0, false // to the dispatch itself
			}
			return uint32(len(frames) - 1 - j), true
		}
	}
	return 0, false
}

// adjustDepth returns the label index n of a branch from the innermost of
// frames, adjusted for the wrapped loops it leaves.
func adjustDepth(n uint32, frames []frame, r *reader) (uint32, error) {
	if int64(n) >= int64(len(frames)) {
		return 0, r.Errorf("branch to label %d from %d deep", n, len(frames))
	}
	top := frames[len(frames)-1]
	target := frames[len(frames)-1-int(n)]
	adjusted := uint64(n) + 3*uint64(top.wraps-target.wraps)
	if adjusted > 1<<32-1 {
		return 0, r.Errorf("branch to label %d, too deep once adjusted", n)
	}
	return uint32(adjusted), nil
}

// rewriteBrTable appends a br_table whose immediates imm (read once by
// skipInstruction) are adjusted.
func rewriteBrTable(out, imm []byte, frames []frame, r *reader) ([]byte, error) {
	ir := &reader{B: imm}
	n, err := ir.U32()
	if err != nil {
		return out, err
	}
	out = appendULEB(append(out, opBrTable), uint64(n))
	for i := uint64(0); i <= uint64(n); i++ {
		l, err := ir.U32()
		if err != nil {
			return out, err
		}
		d, err := adjustDepth(l, frames, r)
		if err != nil {
			return out, err
		}
		out = appendULEB(out, uint64(d))
	}
	return out, nil
}

// control reports whether op may branch, return, trap or open or close a
// block: whether the code after it may not run right after it.
func control(op byte) bool {
	switch op {
	case opUnreachable, opBlock, opLoop, opIf, opElse, opEnd, opBr, opBrIf, opBrTable, opReturn:
		return true
	}
	return false
}

// skipInstruction skips the immediates of the instruction op, whose opcode
// byte r has just read. An opcode it does not know is ErrUnsupported:
// skipping it blindly could misread the rest of the body.
func skipInstruction(r *reader, op byte) error {
	unsupported := func() error {
		return fmt.Errorf("%w: at byte %d: opcode 0x%02x", ErrUnsupported, r.Base+r.Pos-1, op)
	}
	switch {
	case op == opUnreachable, op == opElse, op == opEnd, op == opReturn:
		return nil
	case op == 0x01, op == 0x1a, op == 0x1b, // nop, drop, select
		op >= 0x45 && op <= 0xc4, // numeric, including sign extension (0xc0-0xc4)
		op == 0xd1:               // ref.is_null
		return nil
	case op == opBlock, op == opLoop, op == opIf:
		return skipBlockType(r)
	case op == opBr, op == opBrIf:
		_, err := r.U32()
		return err
	case op == opBrTable:
		n, err := r.U32()
		if err != nil {
			return err
		}
		for i := uint64(0); i <= uint64(n); i++ {
			if _, err := r.U32(); err != nil {
				return err
			}
		}
		return nil
	case op == opCall:
		_, err := r.U32()
		return err
	case op == opCallIndirect:
		return skipU32s(r, 2) // type index, table index
	case op == opSelectT:
		n, err := r.U32()
		if err != nil {
			return err
		}
		for range n {
			t, err := r.Byte()
			if err != nil {
				return err
			}
			if !valueType(t) {
				return fmt.Errorf("%w: at byte %d: select of value type 0x%02x", ErrUnsupported, r.Base+r.Pos-1, t)
			}
		}
		return nil
	case op >= 0x20 && op <= 0x26: // local.get/set/tee, global.get/set, table.get/set
		_, err := r.U32()
		return err
	case op >= 0x28 && op <= 0x3e: // loads and stores
		return skipMemArg(r)
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		_, err := r.U32()
		return err
	case op == opI32Const:
		_, err := r.SLEB(32)
		return err
	case op == opI64Const:
		_, err := r.SLEB(64)
		return err
	case op == opF32Const:
		_, err := r.Bytes(4)
		return err
	case op == opF64Const:
		_, err := r.Bytes(8)
		return err
	case op == opRefNull:
		t, err := r.Byte()
		if err != nil {
			return err
		}
		if t != 0x70 && t != 0x6f {
			return fmt.Errorf("%w: at byte %d: ref.null of heap type 0x%02x", ErrUnsupported, r.Base+r.Pos-1, t)
		}
		return nil
	case op == opRefFunc:
		_, err := r.U32()
		return err
	case op == prefixMisc:
		return skipMisc(r)
	case op == prefixSIMD:
		return skipSIMD(r)
	case op == prefixAtomic:
		return skipAtomic(r)
	}
	// Exception handling (0x06-0x0a, 0x18, 0x19, 0x1f), tail calls (0x12,
	// 0x13), function references (0x14, 0x15, 0xd3-0xd6), GC (0xfb).
	return unsupported()
}

// skipBlockType skips a block type: empty (0x40), one value type, or a type
// index as a non-negative s33.
func skipBlockType(r *reader) error {
	if r.Pos < len(r.B) {
		if c := r.B[r.Pos]; c == blockEmpty || valueType(c) {
			r.Pos++
			return nil
		}
	}
	start := r.Pos
	v, err := r.SLEB(33)
	if err != nil {
		return err
	}
	if v < 0 {
		r.Pos = start
		return fmt.Errorf("%w: at byte %d: block type 0x%02x", ErrUnsupported, r.Base+start, r.B[start])
	}
	return nil
}

func skipU32s(r *reader, n int) error {
	for range n {
		if _, err := r.U32(); err != nil {
			return err
		}
	}
	return nil
}

// skipMemArg skips a memory argument: alignment, then a memory index when
// bit 6 of the alignment says so (multi-memory), then the offset (64 bits
// wide for memory64).
func skipMemArg(r *reader) error {
	align, err := r.U32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.U32(); err != nil {
			return err
		}
	}
	_, err = r.ULEB(64)
	return err
}

// skipMisc skips a 0xfc-prefixed instruction: saturating truncation, bulk
// memory and table instructions.
func skipMisc(r *reader) error {
	start := r.Pos
	sub, err := r.U32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 7: // i32.trunc_sat_f32_s ... i64.trunc_sat_f64_u
		return nil
	case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17: // data.drop, memory.fill, elem.drop, table.grow/size/fill
		return skipU32s(r, 1)
	case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init, memory.copy, table.init, table.copy
		return skipU32s(r, 2)
	}
	return fmt.Errorf("%w: at byte %d: opcode 0xfc %d", ErrUnsupported, r.Base+start-1, sub)
}

// simdGaps are the sub-opcodes in 0x5e..0xff that the SIMD proposal leaves
// unassigned.
var simdGaps = [...]uint32{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
	0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee}

// skipSIMD skips a 0xfd-prefixed instruction of the fixed-width SIMD
// proposal. Relaxed SIMD (0x100 and up) is refused.
func skipSIMD(r *reader) error {
	start := r.Pos
	sub, err := r.U32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 0x0b: // v128.load*, v128.store
		return skipMemArg(r)
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		_, err := r.Bytes(16)
		return err
	case sub >= 0x15 && sub <= 0x22: // extract_lane, replace_lane
		_, err := r.Byte()
		return err
	case sub >= 0x54 && sub <= 0x5b: // v128.load*_lane, v128.store*_lane
		if err := skipMemArg(r); err != nil {
			return err
		}
		_, err := r.Byte()
		return err
	case sub == 0x5c, sub == 0x5d: // v128.load32_zero, v128.load64_zero
		return skipMemArg(r)
	case sub <= 0xff:
		for _, g := range simdGaps {
			if sub == g {
				return fmt.Errorf("%w: at byte %d: opcode 0xfd %#x", ErrUnsupported, r.Base+start-1, sub)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: at byte %d: opcode 0xfd %#x", ErrUnsupported, r.Base+start-1, sub)
}

// skipAtomic skips a 0xfe-prefixed instruction of the threads proposal.
func skipAtomic(r *reader) error {
	start := r.Pos
	sub, err := r.U32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4e: // notify, wait, loads, stores, read-modify-write
		return skipMemArg(r)
	case sub == 0x03: // atomic.fence
		_, err := r.Byte()
		return err
	}
	return fmt.Errorf("%w: at byte %d: opcode 0xfe %#x", ErrUnsupported, r.Base+start-1, sub)
}

// growers are the functions that bound the table.grow of a module at a
// limit, one per table grown, appended after the module's own functions in
// the order of their first use. Each takes what table.grow takes, and
// returns what it returns:
//
//	(func (param $ref reftype) (param $n i32) (result i32)
//	  table.size $t
//	  i64.extend_i32_u
//	  local.get $n
//	  i64.extend_i32_u
//	  i64.add
//	  i64.const limit
//	  i64.gt_u
//	  if                   ;; past the limit
//	    local.get $n
//	    if                 ;; and growing by something
//	      i32.const -1
//	      return
//	    end
//	  end
//	  local.get $ref
//	  local.get $n
//	  table.grow $t)
//
// A function rather than the same code inline: table.grow is rare (Go's
// runtime never grows its table), and the value it takes would need a local
// of the table's reference type in every function that grows one.
type growers struct {
	limit     uint32
	tables    []table // every table of the module, imported first
	firstFunc uint64  // the index the first function added gets
	order     []uint32
	index     map[uint32]uint32 // table -> function added
}

// funcFor returns the index of the function that grows table t, adding it
// on first use.
func (g *growers) funcFor(t uint32, r *reader) (uint32, error) {
	if f, ok := g.index[t]; ok {
		return f, nil
	}
	if uint64(t) >= uint64(len(g.tables)) {
		return 0, r.Errorf("table.grow of table %d, of %d tables", t, len(g.tables))
	}
	f := g.firstFunc + uint64(len(g.order))
	if f >= 1<<32-1 {
		return 0, r.Errorf("too many functions")
	}
	if g.index == nil {
		g.index = make(map[uint32]uint32)
	}
	g.index[t] = uint32(f)
	g.order = append(g.order, t)
	return uint32(f), nil
}

// refTypes returns the reference types of the tables grown, each once, in
// the order of their first use: the types of the functions added.
func (g *growers) refTypes() []byte {
	var refs []byte
	for _, t := range g.order {
		if ref := g.tables[t].ref; !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs
}

// declare returns the contents of the type section (types of its types
// now) and of the function section (funcs functions now) with the types
// and functions added.
func (g *growers) declare(types *section, count uint32, funcs *section, defined uint32) ([]byte, []byte, error) {
	refs := g.refTypes()
	if uint64(count)+uint64(len(refs)) >= 1<<32-1 {
		return nil, nil, fmt.Errorf("%w: %d types", ErrMalformed, count)
	}
	var entries []byte
	for _, ref := range refs {
		entries = append(entries, 0x60, 2, ref, 0x7f, 1, 0x7f) // (param ref i32) (result i32)
	}
	newTypes := appendVector(types, count, uint32(len(refs)), entries...)
	entries = entries[:0]
	for _, t := range g.order {
		ti := count + uint32(slices.Index(refs, g.tables[t].ref))
		entries = appendULEB(entries, uint64(ti))
	}
	return newTypes, appendVector(funcs, defined, uint32(len(g.order)), entries...), nil
}

// appendBodies appends the bodies of the functions added, as code section
// entries.
func (g *growers) appendBodies(out []byte) []byte {
	var body []byte
	for _, t := range g.order {
		body = append(body[:0], 0) // no locals
		body = appendULEB(append(body, prefixMisc, miscTableSize), uint64(t))
		body = append(body, opI64ExtendI32U, opLocalGet, 1, opI64ExtendI32U, opI64Add)
		body = appendSLEB(append(body, opI64Const), int64(g.limit))
		body = append(body, opI64GtU, opIf, blockEmpty, opLocalGet, 1, opIf, blockEmpty)
		body = appendSLEB(append(body, opI32Const), -1)
		body = append(body, opReturn, opEnd, opEnd, opLocalGet, 0, opLocalGet, 1, prefixMisc, miscTableGrow)
		body = appendULEB(body, uint64(t))
		body = append(body, opEnd)
		out = appendULEB(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out
}
