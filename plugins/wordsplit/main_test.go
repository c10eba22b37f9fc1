package main

import (
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

// words splits s with nextWord.
func words(s string) []string {
	var out []string
	for pos := 0; ; {
		w, next := nextWord([]byte(s), pos, nil)
		if w == nil {
			return out
		}
		out = append(out, string(w))
		pos = next
	}
}

func TestNextWord(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"   ,.;", ""},
		{"Hello, World!", "hello world"},
		{"it's 2 o'clock", "it s 2 o clock"},
		{"ÉCOLE Straße ΣΊΣΥΦΟΣ", "école straße σίσυφοσ"},
		{"cafe\u0301 au lait", "cafe\u0301 au lait"}, // combining acute stays in the word
		{"\u0301lone mark", "lone mark"},             // a leading mark is a separator
		{"日本語 テキスト", "日本語 テキスト"},
		{"x\xffy", "x y"}, // invalid UTF-8 separates
		{"tab\tnew\nline", "tab new line"},
		{"١٢٣ arabic-indic", "١٢٣ arabic indic"},
	} {
		if got := strings.Join(words(tc.in), " "); got != tc.want {
			t.Errorf("words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzNextWord checks nextWord against a definition with the strings and
// unicode packages.
func FuzzNextWord(f *testing.F) {
	f.Add("Hello, Wörld! cafe\u0301 x\xffy")
	f.Fuzz(func(t *testing.T, s string) {
		got := words(s)
		var want []string
		var cur []rune
		flush := func() {
			if len(cur) > 0 {
				want = append(want, strings.Map(unicode.ToLower, string(cur)))
				cur = cur[:0]
			}
		}
		// Ranging over a string yields U+FFFD for invalid UTF-8, and U+FFFD
		// (a symbol) is a separator either way.
		for _, r := range s {
			if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mark, r) && len(cur) > 0 {
				cur = append(cur, r)
			} else {
				flush()
			}
		}
		flush()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("words(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestWordsplit(t *testing.T) {
	h := sluicetest.New()
	in := sluicetest.KV("doc", "The cat; the HAT.")
	in.Time = 42
	outs, rejects, err := h.Process(in, sluicetest.KV("empty", " ! "), sluicetest.KV("one", "One"))
	if err != nil || len(rejects) != 0 {
		t.Fatal(err, rejects)
	}
	var got []string
	for _, o := range outs {
		if string(o.Key) != string(o.Value) {
			t.Errorf("key %q != value %q", o.Key, o.Value)
		}
		if o.Origin == 0 && o.Time != 42 {
			t.Errorf("time %d, want 42", o.Time)
		}
		got = append(got, string(o.Key)+"@"+string(rune('0'+o.Origin)))
	}
	if want := "the@0 cat@0 the@0 hat@0 one@2"; strings.Join(got, " ") != want {
		t.Errorf("outputs %v, want %s", got, want)
	}
}

func TestWordsplitSameInWasm(t *testing.T) {
	text := strings.Repeat("Über die Brücke, dann 2 km — geradeaus! ", 300)
	plugintest.SameInWasm(t, []plugintest.Case{
		{Name: "text", Batches: [][]sluice.Record{
			{sluicetest.KV("a", "Hello, World"), sluicetest.KV("b", text), sluicetest.KV("c", "")},
			{sluicetest.KV("d", "x\xffy cafe\u0301")},
		}},
	})
}

// BenchmarkSplit is the plugin's logic natively over a 1 KiB text, for
// comparison with the plugin in WebAssembly.
func BenchmarkSplit(b *testing.B) {
	text := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1024])
	buf := make([]byte, 0, 64)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		for pos := 0; ; {
			var w []byte
			w, pos = nextWord(text, pos, buf[:0])
			if w == nil {
				break
			}
			buf = w
		}
	}
}
