package grepsumop_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/grepsum/grepsumop"
)

// TestResultText: AppendResult and ParseResult round-trip, and ParseResult
// refuses what AppendResult never writes, naming what is wrong.
func TestResultText(t *testing.T) {
	for _, c := range []struct {
		r    grepsumop.Result
		text string
	}{
		{grepsumop.Result{}, "aborted"},
		{grepsumop.Result{Committed: true, Writes: []grepsumop.Write{{Key: 17, Value: 2210}, {Key: 3, Value: -5}}}, "committed 17=2210 3=-5"},
		{grepsumop.Result{Committed: true, Writes: []grepsumop.Write{{Key: math.MaxUint32, Value: math.MinInt64}}}, "committed 4294967295=-9223372036854775808"},
	} {
		text := grepsumop.AppendResult(nil, &c.r)
		if string(text) != c.text {
			t.Errorf("%+v: %q, want %q", c.r, text, c.text)
		}
		got, err := grepsumop.ParseResult(text)
		if err != nil || !reflect.DeepEqual(got, c.r) {
			t.Errorf("%q parsed as %+v, %v; want %+v", text, got, err, c.r)
		}
	}
	for text, want := range map[string]string{
		"":                  "empty",
		"aborted 1=2":       "writes after aborted",
		"done 1=2":          `outcome "done"`,
		"committed 1":       `write "1"`,
		"committed x=1":     `key "x"`,
		"committed 1=y":     `value "y"`,
		"committed 1=2 3=?": `value "?"`,
	} {
		if _, err := grepsumop.ParseResult([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseResult(%q): %v, want an error containing %s", text, err, want)
		}
	}
}
