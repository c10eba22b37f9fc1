package adapt_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The crafted batches run on txn Schedulers, whose workers must be gone
// when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
