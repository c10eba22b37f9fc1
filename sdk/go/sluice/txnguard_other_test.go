//go:build !linux

package sluice

// guarded returns a copy of b: only Linux builds put it against a guard
// page (txnguard_linux_test.go).
func guarded(b []byte) []byte { return append([]byte(nil), b...) }

// guardedRoom returns a copy of b.
func guardedRoom(b []byte, _ int) []byte { return append([]byte(nil), b...) }
