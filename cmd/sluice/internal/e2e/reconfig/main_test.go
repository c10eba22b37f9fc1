package reconfig

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
)

// sl is the sluice binary and the plugins wordcount, wordcountv2 (its
// outputs marked, for the swap tests) and upper (the first stage of the
// placement test), built once in TestMain.
var sl *sluicetest.Sluice

func TestMain(m *testing.M) {
	os.Exit(sluicetest.Main(m, map[string]string{
		"wordcount":   "plugins/wordcount",
		"upper":       "plugins/upper",
		"wordcountv2": "cmd/sluice/internal/e2e/reconfig/testdata/wordcountv2",
	}, func(s *sluicetest.Sluice) { sl = s }))
}
