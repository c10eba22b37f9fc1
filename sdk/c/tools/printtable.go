//go:build ignore

// Command printtable writes the table of printable runes that sluice.c's
// sluice_buf_append_quoted uses to quote as Go's strconv.Quote does, from
// the strconv.IsPrint of the Go toolchain that runs it, between the
// markers in the file it is given:
//
//	go run sdk/c/tools/printtable.go sdk/c/sluice.c
//
// Rerun it when Go's Unicode version changes, so that C operators keep
// quoting exactly as Go operators do.
package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"runtime"
	"strconv"
	"unicode"
)

const (
	begin = "/* BEGIN GENERATED PRINT TABLE */\n"
	end   = "/* END GENERATED PRINT TABLE */\n"
)

// planes are the Unicode planes that hold printable runes; sluice.c's
// is_print has one case per plane.
var planes = []rune{0, 1, 2, 3, 14}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go run printtable.go sdk/c/sluice.c")
	}
	path := os.Args[1]
	src, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	i, j := bytes.Index(src, []byte(begin)), bytes.Index(src, []byte(end))
	if i < 0 || j < i {
		log.Fatalf("%s: no %q ... %q markers", path, begin, end)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* From strconv.IsPrint of %s (Unicode %s). */\n", runtime.Version(), unicodeVersion())
	total := 0
	for _, p := range planes {
		ranges := printable(p)
		total += len(ranges)
		fmt.Fprintf(&b, "static const uint16_t print_plane%d[] = {", p)
		for k, r := range ranges {
			if k%6 == 0 {
				b.WriteString("\n   ")
			}
			fmt.Fprintf(&b, " 0x%04x, 0x%04x,", r[0]&0xffff, r[1]&0xffff)
		}
		b.WriteString("\n};\n")
	}
	if other := countOutside(); other != 0 {
		log.Fatalf("%d printable runes lie outside planes %v: extend is_print in sluice.c", other, planes)
	}
	out := append(append(append([]byte{}, src[:i+len(begin)]...), b.Bytes()...), src[j:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d ranges", path, total)
}

// printable returns the inclusive ranges of printable runes above U+007F
// in plane p; none crosses a plane.
func printable(p rune) [][2]rune {
	var rs [][2]rune
	lo := max(p<<16, 0x80)
	for r := lo; r <= p<<16|0xffff; r++ {
		if !strconv.IsPrint(r) {
			continue
		}
		if n := len(rs); n > 0 && rs[n-1][1] == r-1 {
			rs[n-1][1] = r
			continue
		}
		rs = append(rs, [2]rune{r, r})
	}
	return rs
}

// countOutside counts the printable runes outside planes.
func countOutside() int {
	n := 0
	for r := rune(0x10000); r <= 0x10ffff; r++ {
		in := false
		for _, p := range planes {
			in = in || r>>16 == p
		}
		if !in && strconv.IsPrint(r) {
			n++
		}
	}
	return n
}

// unicodeVersion is the Unicode version of the toolchain's tables.
func unicodeVersion() string { return unicode.Version }
