package build

import (
	"testing"

	"go.uber.org/goleak"
)

// Builds run compilers through os/exec, whose copying goroutines must end
// with each build.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
