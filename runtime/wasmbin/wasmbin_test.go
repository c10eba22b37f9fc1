package wasmbin

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// module assembles a module of version 1 from sections given as id and
// content (contents shorter than 128 bytes).
func module(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s[0], byte(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func custom(name, body string) []byte {
	return append([]byte{0, byte(len(name))}, name+body...)
}

// The Reader's errors wrap ErrMalformed as an *Error naming the offset in
// the module, and no input makes it panic.
func TestReaderErrors(t *testing.T) {
	r := &Reader{B: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, Base: 100}
	_, err := r.U32()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) || e.Offset != 105 || e.Reason != "integer longer than 32 bits" {
		t.Errorf("U32 of 6 bytes: %v", err)
	}
	r = &Reader{B: []byte{5, 'a', 'b'}}
	if _, err := r.Name(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "5 bytes announced, 2 left") {
		t.Errorf("Name past the end: %v", err)
	}
	r = &Reader{B: []byte{0x7f}}
	if v, err := r.SLEB(33); err != nil || v != -1 {
		t.Errorf("SLEB(0x7f) = %d, %v", v, err)
	}
}

// CustomSections yields each custom section's name and body, skips the
// others, and stops at a section that runs past the module.
func TestCustomSections(t *testing.T) {
	wasm := module(custom("a", "1"), []byte{1, 0}, custom("sluice.kinds", "map"), custom("", ""))
	var got []string
	for name, body := range CustomSections(wasm) {
		got = append(got, name+"="+string(body))
	}
	if want := []string{"a=1", "sluice.kinds=map", "="}; !slices.Equal(got, want) {
		t.Errorf("sections %q, want %q", got, want)
	}
	cut := append(module(custom("a", "1")), 0, 100, 1, 'b')
	got = nil
	for name := range CustomSections(cut) {
		got = append(got, name)
	}
	if !slices.Equal(got, []string{"a"}) {
		t.Errorf("with a section past the end: %q", got)
	}
	for range CustomSections([]byte("not wasm")) {
		t.Error("bytes that are not a module have custom sections")
	}
}

// CheckBounds refuses a count that cannot fit and names the section, and
// accepts a module whose counts fit.
func TestCheckBounds(t *testing.T) {
	if err := CheckBounds(module([]byte{1, 1, 0x60, 0, 0}, custom("x", "y"))); err != nil {
		t.Errorf("a well-formed module: %v", err)
	}
	err := CheckBounds(module([]byte{2, 0x80, 0x80, 0x80, 0x80, 0x01}))
	if err == nil || !strings.Contains(err.Error(), "import section at 0x8: at 0xf: 268435456 imports cannot fit in the 0 bytes left") {
		t.Errorf("2^28 imports: %v", err)
	}
	if err := CheckBounds([]byte("not wasm")); err != nil {
		t.Errorf("bytes that are not a module are left to the engine: %v", err)
	}
}
