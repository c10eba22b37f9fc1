package failover

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
)

// sl is the sluice binary and the plugin wordcount, built once in
// TestMain.
var sl *sluicetest.Sluice

func TestMain(m *testing.M) {
	os.Exit(sluicetest.Main(m, map[string]string{"wordcount": "plugins/wordcount", "ledger": "plugins/ledger"}, func(s *sluicetest.Sluice) { sl = s }))
}
