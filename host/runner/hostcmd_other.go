//go:build !unix

package runner

import osexec "os/exec"

// ownGroup leaves cmd as it is: only the command itself is killed at its
// timeout.
func ownGroup(*osexec.Cmd) {}
