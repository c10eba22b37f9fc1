package main

import (
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	var buf []byte // the current word, reused across records
	sluice.FlatMap(func(r sluice.Record, out *sluice.Emitter) error {
		for pos := 0; ; {
			var word []byte
			word, pos = nextWord(r.Value, pos, buf[:0])
			if word == nil {
				return nil
			}
			buf = word
			// Emit encodes at once, so buf may be reused for the next word.
			out.Emit(sluice.Record{Key: word, Value: word, Time: r.Time})
		}
	})
}

// nextWord finds the first word of src at or after pos, appends it
// lower-cased to dst and returns the result and the position after the
// word. It returns a nil word when there is none left.
func nextWord(src []byte, pos int, dst []byte) (word []byte, next int) {
	// Skip separators. A mark with no letter before it is a separator too.
	for pos < len(src) {
		c := src[pos]
		if c < utf8.RuneSelf {
			if isASCIIWord(c) {
				break
			}
			pos++
			continue
		}
		r, size := utf8.DecodeRune(src[pos:])
		if r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			break
		}
		pos += size
	}
	if pos == len(src) {
		return nil, pos
	}
	if dst == nil {
		dst = make([]byte, 0, 32)
	}
	for pos < len(src) {
		c := src[pos]
		if c < utf8.RuneSelf {
			if !isASCIIWord(c) {
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			pos++
			continue
		}
		r, size := utf8.DecodeRune(src[pos:])
		if r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mark, r)) {
			break
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		pos += size
	}
	return dst, pos
}

func isASCIIWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
