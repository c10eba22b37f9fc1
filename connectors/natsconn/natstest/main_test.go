package natstest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
)

func TestMain(m *testing.M) {
	natstest.MainMember()
	goleak.VerifyTestMain(m)
}
