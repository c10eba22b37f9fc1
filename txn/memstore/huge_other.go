//go:build !linux

package memstore

import "unsafe"

// adviseHuge does nothing: huge pages are asked for on Linux only.
func adviseHuge(unsafe.Pointer, int) {}
