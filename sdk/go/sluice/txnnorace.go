//go:build !race

package sluice

// raceBuild is 0 outside race builds (see txnrace.go).
const raceBuild = 0
