package biddingop_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/bidding/biddingop"
	"github.com/sluicehq/sluice/txn/apps/bidding/event"
)

// TestResultText: AppendResult writes the documented text, ParseResult
// reads it back, and refuses what AppendResult never writes, naming what
// is wrong.
func TestResultText(t *testing.T) {
	for _, c := range []struct {
		r    biddingop.Result
		text string
	}{
		{biddingop.Result{Kind: event.Buy, Committed: true, Paid: 152}, "buy committed 152"},
		{biddingop.Result{Kind: event.Buy}, "buy aborted"},
		{biddingop.Result{Kind: event.Alert, Committed: true}, "alert committed"},
		{biddingop.Result{Kind: event.TopUp, Committed: true}, "top-up committed"},
		{biddingop.Result{Kind: event.TopUp}, "top-up aborted"},
	} {
		text := biddingop.AppendResult(nil, &c.r)
		if string(text) != c.text {
			t.Errorf("%+v: %q, want %q", c.r, text, c.text)
		}
		got, err := biddingop.ParseResult(text)
		if err != nil || !reflect.DeepEqual(got, c.r) {
			t.Errorf("%q parsed as %+v, %v; want %+v", text, got, err, c.r)
		}
	}
	for text, want := range map[string]string{
		"buy":                    "want a kind and an outcome",
		"sell committed 1":       `kind "sell"`,
		"buy maybe 1":            `outcome "maybe"`,
		"buy committed":          "2 words, want 3",
		"buy aborted 1":          "3 words, want 2",
		"alert committed 5":      "3 words, want 2",
		"buy committed lots":     `amount paid "lots"`,
		"top-up committed 1 2 3": "5 words, want 2",
	} {
		if _, err := biddingop.ParseResult([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseResult(%q): %v, want an error containing %s", text, err, want)
		}
	}
}
