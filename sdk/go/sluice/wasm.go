//go:build wasip1

package sluice

import (
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

// The host functions of ABI version 1 (see abi/ABI.md). Pointers become i32
// offsets into the module's memory.

//go:wasmimport sluice emit
func hostEmit(ptr unsafe.Pointer, n uint32)

//go:wasmimport sluice reject
func hostReject(origin uint32, msg unsafe.Pointer, n uint32)

//go:wasmimport sluice table_id
func hostTableID(name unsafe.Pointer, n uint32) int32

//go:wasmimport sluice state_get
func hostStateGet(table int32, key unsafe.Pointer, keyLen uint32, buf unsafe.Pointer, bufCap uint32) int32

//go:wasmimport sluice state_put
func hostStatePut(table int32, key unsafe.Pointer, keyLen uint32, val unsafe.Pointer, valLen uint32)

//go:wasmimport sluice state_delete
func hostStateDelete(table int32, key unsafe.Pointer, keyLen uint32)

//go:wasmimport sluice log
func hostLog(level int32, msg unsafe.Pointer, n uint32)

// The host functions of transactional operators (abi/txn.go).

//go:wasmimport sluice txn_plan
func hostTxnPlan(ptr unsafe.Pointer, n uint32)

//go:wasmimport sluice txn_get
func hostTxnGet(table int32, key unsafe.Pointer, keyLen uint32, buf unsafe.Pointer, bufCap uint32) int32

//go:wasmimport sluice txn_put
func hostTxnPut(table int32, key unsafe.Pointer, keyLen uint32, val unsafe.Pointer, valLen uint32) int32

//go:wasmimport sluice txn_delete
func hostTxnDelete(table int32, key unsafe.Pointer, keyLen uint32) int32

// nativeBuild is false: a Call never has a native access here, and the
// code that serves one is compiled out.
const nativeBuild = false

// wasmHost is the real host, reached through the imports above.
type wasmHost struct{}

func ptr(b []byte) unsafe.Pointer    { return unsafe.Pointer(unsafe.SliceData(b)) }
func strPtr(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }

func (wasmHost) Emit(batch []byte) { hostEmit(ptr(batch), uint32(len(batch))) }
func (wasmHost) Reject(origin uint32, msg string) {
	hostReject(origin, strPtr(msg), uint32(len(msg)))
}
func (wasmHost) TableID(name string) int32 { return hostTableID(strPtr(name), uint32(len(name))) }
func (wasmHost) StateGet(table int32, key, buf []byte) int32 {
	return hostStateGet(table, ptr(key), uint32(len(key)), ptr(buf), uint32(len(buf)))
}
func (wasmHost) StatePut(table int32, key, value []byte) {
	hostStatePut(table, ptr(key), uint32(len(key)), ptr(value), uint32(len(value)))
}
func (wasmHost) StateDelete(table int32, key []byte) {
	hostStateDelete(table, ptr(key), uint32(len(key)))
}
func (wasmHost) Log(level int32, msg string) { hostLog(level, strPtr(msg), uint32(len(msg))) }
func (wasmHost) TxnPlan(decls []byte)        { hostTxnPlan(ptr(decls), uint32(len(decls))) }
func (wasmHost) TxnGet(table int32, key, buf []byte) int32 {
	return hostTxnGet(table, ptr(key), uint32(len(key)), ptr(buf), uint32(len(buf)))
}
func (wasmHost) TxnPut(table int32, key, value []byte) int32 {
	return hostTxnPut(table, ptr(key), uint32(len(key)), ptr(value), uint32(len(value)))
}
func (wasmHost) TxnDelete(table int32, key []byte) int32 {
	return hostTxnDelete(table, ptr(key), uint32(len(key)))
}

// address returns the guest-memory address of p, for the result slot of
// sluice_apply.
func address(p *byte) uint32 { return uint32(uintptr(unsafe.Pointer(p))) }

func tableID(name string) (Table, error) { return theGuest.tableID(name) }

// theGuest is the module's one guest core. A WebAssembly instance is one
// operator instance with its own memory, so the exports, which take no
// receiver, share this value; it reads the handlers lazily because the
// plugin's init functions run after this package's.
var theGuest = newGuest(&registered, wasmHost{})

func logTo(level Level, msg string) { theGuest.host.Log(int32(level), msg) }

//go:wasmexport sluice_abi_version
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportABIVersion() int32 { return abi.Version }

//go:wasmexport sluice_alloc
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportAlloc(size int32) unsafe.Pointer {
	b := theGuest.alloc(size)
	if b == nil {
		return nil
	}
	return ptr(b)
}

//go:wasmexport sluice_kinds
//lint:ignore U1000 called by the build tool through the //go:wasmexport above
func exportKinds() int32 { return theGuest.kinds() }

//go:wasmexport sluice_features
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportFeatures() int32 { return theGuest.features() }

//go:wasmexport sluice_configure
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportConfigure(p unsafe.Pointer, n uint32) int32 {
	return theGuest.configure(region(p, n))
}

//go:wasmexport sluice_process
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportProcess(p unsafe.Pointer, n uint32) int32 {
	return theGuest.process(region(p, n))
}

//go:wasmexport sluice_plan
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportPlan(p unsafe.Pointer, n uint32) int32 {
	return theGuest.plan(region(p, n))
}

//go:wasmexport sluice_apply
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportApply(p unsafe.Pointer, n uint32) int32 {
	return theGuest.apply(region(p, n))
}

//go:wasmexport sluice_post
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportPost(events unsafe.Pointer, eventsLen uint32, outcomes unsafe.Pointer, outcomesLen uint32) int32 {
	return theGuest.post(region(events, eventsLen), region(outcomes, outcomesLen))
}

// region returns the n bytes at p, which sluice_alloc handed out, so n is
// at most maxAlloc; larger, the call traps. unsafe.Slice would cost a
// function call per batch, to check a multiplication by one.
func region(p unsafe.Pointer, n uint32) []byte {
	if p == nil {
		return nil // an empty region; the call then fails on its contents
	}
	return (*[maxAlloc]byte)(p)[:n:n]
}

//go:wasmexport sluice_agg_add
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportAggAdd(p unsafe.Pointer, n uint32) int32 { return theGuest.aggAdd(region(p, n)) }

//go:wasmexport sluice_agg_merge
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportAggMerge(p unsafe.Pointer, n uint32) int32 { return theGuest.aggMerge(region(p, n)) }

//go:wasmexport sluice_agg_fire
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportAggFire(p unsafe.Pointer, n uint32) int32 { return theGuest.aggFire(region(p, n)) }

//go:wasmexport sluice_window_fire
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportWindowFire(p unsafe.Pointer, n uint32) int32 { return theGuest.windowFire(region(p, n)) }

//go:wasmexport sluice_join
//lint:ignore U1000 called by the host through the //go:wasmexport above
func exportJoin(p unsafe.Pointer, n uint32) int32 { return theGuest.join(region(p, n)) }
