package tollop_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/toll/tollop"
)

// TestResultText: AppendResult writes the documented text, ParseResult
// reads it back, and refuses what AppendResult never writes, naming what
// is wrong.
func TestResultText(t *testing.T) {
	for _, c := range []struct {
		r    tollop.Result
		text string
	}{
		{tollop.Result{}, "aborted"},
		{tollop.Result{Committed: true, Average: 121.5, Vehicles: 17}, "committed 121.50 17"},
		{tollop.Result{Committed: true, Average: 100.0 / 3, Vehicles: 128}, "committed 33.33 128"},
	} {
		text := tollop.AppendResult(nil, &c.r)
		if string(text) != c.text {
			t.Errorf("%+v: %q, want %q", c.r, text, c.text)
		}
		got, err := tollop.ParseResult(text)
		if err != nil || got.Committed != c.r.Committed || got.Vehicles != c.r.Vehicles || string(tollop.AppendResult(nil, &got)) != c.text {
			t.Errorf("%q parsed as %+v, %v", text, got, err)
		}
	}
	for text, want := range map[string]string{
		"":                     "want",
		"aborted 1 2":          "want",
		"committed 1":          "want",
		"committed x 2":        `average "x"`,
		"committed 1.5 many":   `vehicles "many"`,
		"finished 1.5 2":       "want",
		"committed 1.5 2 more": "want",
	} {
		if _, err := tollop.ParseResult([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseResult(%q): %v, want an error containing %s", text, err, want)
		}
	}
}
