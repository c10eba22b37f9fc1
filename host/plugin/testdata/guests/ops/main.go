// Command ops is the raw test guest that serves most behaviour tests. It
// imports every sluice host function directly (no SDK) and switches on each
// input record's value:
//
//	anything else        emit the record unchanged (map)
//	drop                 emit nothing (filter)
//	dup:N                emit N copies (flatmap)
//	count                keyed: increment the counter under the record's key
//	                     in the default table and emit its new value
//	count-trap           increment the counter, then trap
//	get / put / delete   state_get (emit the value or "<none>"), state_put of
//	                     the value "v", state_delete, all under the record's key
//	get-small            state_get with a 1-byte buffer; emit the returned length
//	table:NAME           emit the handle table_id returns for NAME
//	put-table:N          state_put into table handle N
//	config               emit the configuration sluice_configure received
//	trap                 an out-of-bounds memory load (a Wasm trap)
//	panic                a Go panic (the guest exits)
//	loop                 spin forever
//	grow                 allocate far more memory than any test engine allows
//	status               log an error and return StatusError
//	reject               reject the record with the message "rejected on request"
//	reject-bad-origin    reject an input record that does not exist
//	emit-bad-origin      emit a record whose Origin is not in the input batch
//	emit-flags           emit the record with input 1 in its flags, which
//	                     this guest does not declare (no sluice_features)
//	emit-malformed       emit three bytes that are not a batch
//	emit-big:N           emit one record with an N-byte value
//	emit-many:N:S        emit N records of S-byte values, one emit call each
//	log:LEVEL:MSG        log MSG at LEVEL (a number)
//	log-many:N           log N messages at info
//	oob:FUNC[:ARG]       pass an out-of-bounds pointer to host function FUNC
//	                     (ARG picks which pointer when there are several)
//	overflow:FUNC[:ARG]  pass a pointer and length whose sum wraps past 2^32
package main

import (
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

func main() {}

//go:wasmimport sluice emit
func emit(ptr, n uint32)

//go:wasmimport sluice reject
func reject(origin, ptr, n uint32)

//go:wasmimport sluice table_id
func tableID(ptr, n uint32) int32

//go:wasmimport sluice state_get
func stateGet(table int32, kp, kn, bp, bc uint32) int32

//go:wasmimport sluice state_put
func statePut(table int32, kp, kn, vp, vn uint32)

//go:wasmimport sluice state_delete
func stateDelete(table int32, kp, kn uint32)

//go:wasmimport sluice log
func hostLog(level int32, ptr, n uint32)

const (
	oobPtr  = 0xFFFF_0000 // beyond any memory a test engine allows
	wrapPtr = 0xFFFF_FFF0 // wrapPtr + wrapLen wraps around 2^32
	wrapLen = 0x20
)

var (
	inBufs [][]byte // buffers handed out by sluice_alloc, kept until the next batch
	config []byte
	out    []byte
	count  uint32
	sink   uint64
	hog    [][]byte
)

func addr(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

func str(s string) (uint32, uint32) {
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s))
}

func logf(level int32, msg string) {
	p, n := str(msg)
	hostLog(level, p, n)
	runtime.KeepAlive(msg)
}

//go:wasmexport sluice_abi_version
func abiVersion() int32 { return abi.Version }

//go:wasmexport sluice_alloc
func alloc(size uint32) uint32 {
	b := make([]byte, size)
	inBufs = append(inBufs, b)
	return addr(b)
}

//go:wasmexport sluice_configure
func configure(ptr, n uint32) int32 {
	config = append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)...)
	inBufs = inBufs[:0]
	switch {
	case strings.Contains(string(config), `"bad"`):
		logf(abi.LogError, `bad config: key "bad" is not allowed`)
		return abi.StatusBadConfig
	case strings.Contains(string(config), `"trap"`):
		trap()
	}
	return abi.StatusOK
}

func trap() {
	p := (*uint64)(unsafe.Pointer(uintptr(oobPtr)))
	sink += *p
}

func add(r *abi.Record, value []byte) {
	o := *r
	o.Value = value
	out = abi.AppendRecord(out, &o)
	count++
}

func flush() {
	if count == 0 {
		return
	}
	abi.SetBatchCount(out, count)
	emit(addr(out), uint32(len(out)))
	out = abi.AppendBatchHeader(out[:0], 0)
	count = 0
}

//go:wasmexport sluice_process
func process(ptr, n uint32) int32 {
	defer func() { inBufs = inBufs[:0] }()
	in := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
	d, err := abi.NewDecoder(in)
	if err != nil {
		logf(abi.LogError, "decoding input: "+err.Error())
		return abi.StatusError
	}
	out = abi.AppendBatchHeader(out[:0], 0)
	count = 0
	var r abi.Record
	for d.Next(&r) {
		if st := one(&r); st != abi.StatusOK {
			return st
		}
	}
	if err := d.Err(); err != nil {
		logf(abi.LogError, "decoding input: "+err.Error())
		return abi.StatusError
	}
	flush()
	return abi.StatusOK
}

func getCounter(key []byte) int {
	buf := make([]byte, 16)
	got := stateGet(abi.DefaultTable, addr(key), uint32(len(key)), addr(buf), uint32(len(buf)))
	if got < 0 {
		return 0
	}
	v, _ := strconv.Atoi(string(buf[:got]))
	return v
}

func putCounter(key []byte, v int) {
	s := []byte(strconv.Itoa(v))
	statePut(abi.DefaultTable, addr(key), uint32(len(key)), addr(s), uint32(len(s)))
	runtime.KeepAlive(s)
}

func one(r *abi.Record) int32 {
	op, arg, _ := strings.Cut(string(r.Value), ":")
	switch op {
	case "drop":
	case "dup":
		n, _ := strconv.Atoi(arg)
		for range n {
			add(r, r.Value)
		}
	case "count":
		v := getCounter(r.Key) + 1
		putCounter(r.Key, v)
		add(r, []byte(strconv.Itoa(v)))
	case "count-trap":
		putCounter(r.Key, getCounter(r.Key)+1)
		trap()
	case "get":
		buf := make([]byte, 256)
		got := stateGet(abi.DefaultTable, addr(r.Key), uint32(len(r.Key)), addr(buf), uint32(len(buf)))
		if got < 0 {
			add(r, []byte("<none>"))
		} else {
			add(r, buf[:got])
		}
	case "get-small":
		buf := make([]byte, 1)
		got := stateGet(abi.DefaultTable, addr(r.Key), uint32(len(r.Key)), addr(buf), 1)
		add(r, []byte(strconv.Itoa(int(got))))
	case "put":
		v := []byte("v")
		statePut(abi.DefaultTable, addr(r.Key), uint32(len(r.Key)), addr(v), 1)
		runtime.KeepAlive(v)
		add(r, r.Value)
	case "delete":
		stateDelete(abi.DefaultTable, addr(r.Key), uint32(len(r.Key)))
		add(r, r.Value)
	case "table":
		p, n := str(arg)
		id := tableID(p, n)
		add(r, []byte(strconv.Itoa(int(id))))
	case "put-table":
		t, _ := strconv.Atoi(arg)
		v := []byte("v")
		statePut(int32(t), addr(r.Key), uint32(len(r.Key)), addr(v), 1)
		runtime.KeepAlive(v)
		add(r, r.Value)
	case "config":
		add(r, config)
	case "trap":
		trap()
	case "panic":
		panic("guest panics on request")
	case "loop":
		for {
			sink++
		}
	case "grow":
		for range 1 << 12 {
			hog = append(hog, make([]byte, 1<<20))
		}
	case "status":
		logf(abi.LogError, "status requested by record "+strconv.Itoa(int(r.Origin)))
		return abi.StatusError
	case "reject":
		p, n := str("rejected on request")
		reject(r.Origin, p, n)
	case "reject-bad-origin":
		p, n := str("no such record")
		reject(1_000_000, p, n)
	case "emit-bad-origin":
		o := *r
		o.Origin = 1_000_000
		b := abi.AppendRecord(abi.AppendBatchHeader(nil, 1), &o)
		emit(addr(b), uint32(len(b)))
	case "emit-flags":
		o := *r
		o.Input = 1
		b := abi.AppendRecord(abi.AppendBatchHeader(nil, 1), &o)
		emit(addr(b), uint32(len(b)))
	case "emit-malformed":
		b := []byte{1, 2, 3}
		emit(addr(b), 3)
	case "emit-big":
		n, _ := strconv.Atoi(arg)
		o := *r
		o.Value = make([]byte, n)
		b := abi.AppendRecord(abi.AppendBatchHeader(nil, 1), &o)
		emit(addr(b), uint32(len(b)))
	case "emit-many":
		ns, ss, _ := strings.Cut(arg, ":")
		n, _ := strconv.Atoi(ns)
		s, _ := strconv.Atoi(ss)
		o := *r
		o.Value = make([]byte, s)
		b := abi.AppendRecord(abi.AppendBatchHeader(nil, 1), &o)
		for range n {
			emit(addr(b), uint32(len(b)))
		}
	case "log":
		ls, msg, _ := strings.Cut(arg, ":")
		l, _ := strconv.Atoi(ls)
		logf(int32(l), msg)
		add(r, r.Value)
	case "log-many":
		n, _ := strconv.Atoi(arg)
		for i := range n {
			logf(abi.LogInfo, "message "+strconv.Itoa(i))
		}
		add(r, r.Value)
	case "oob":
		oob(r, arg, oobPtr, 8)
	case "overflow":
		oob(r, arg, wrapPtr, wrapLen)
	default:
		add(r, r.Value)
	}
	return abi.StatusOK
}

// oob calls host function fn with the pointer/length pair (p, n) in place of
// one of its valid ranges.
func oob(r *abi.Record, fn string, p, n uint32) {
	key := []byte("k")
	kp, kn := addr(key), uint32(1)
	buf := make([]byte, 8)
	bp, bc := addr(buf), uint32(8)
	switch fn {
	case "emit":
		emit(p, n)
	case "reject":
		reject(r.Origin, p, n)
	case "log":
		hostLog(abi.LogInfo, p, n)
	case "table_id":
		tableID(p, n)
	case "state_get":
		stateGet(0, p, n, bp, bc)
	case "state_get:buf":
		stateGet(0, kp, kn, p, n)
	case "state_put":
		statePut(0, p, n, bp, bc)
	case "state_put:value":
		statePut(0, kp, kn, p, n)
	case "state_delete":
		stateDelete(0, p, n)
	}
	runtime.KeepAlive(key)
	runtime.KeepAlive(buf)
}
