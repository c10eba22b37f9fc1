package runtime

import (
	"errors"
	"strings"
	"testing"
)

func TestStderrBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{"empty", 16, nil, ""},
		{"fits", 16, []string{"ab", "cd\n"}, "abcd"},
		{"exactly full", 8, []string{"12345678"}, "12345678"},
		{"head and tail", 8, []string{"HH", "xxxxxxxxxx", "tail12"}, "HH\n...\ntail12"},
		{"one big write", 8, []string{"HHxxxxxxxxxxxxT12345"}, "HH\n...\nT12345"},
		{"many small writes", 8, []string{"HH", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}, "HH\n...\ngh" + "ijkl"},
		{"partial rune dropped", 8, []string{"HH", "xxxxxxxxx", "é12345"}, "HH\n...\n12345"},
		{"zero limit", 0, []string{"anything"}, ""},
		{"negative limit", -5, []string{"anything"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newStderrBuffer(tc.limit)
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := b.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("reset", func(t *testing.T) {
		b := newStderrBuffer(8)
		b.Write([]byte("old output"))
		b.reset()
		b.Write([]byte("new"))
		if got := b.String(); got != "new" {
			t.Errorf("after reset: %q", got)
		}
	})
}

func TestSignatureString(t *testing.T) {
	for _, tc := range []struct {
		f    FuncInfo
		want string
	}{
		{FuncInfo{Name: "noop"}, "noop ()"},
		{FuncInfo{Module: "sluice", Name: "bogus", Signature: Signature{Params: []ValueType{I32}, Results: []ValueType{I32}}}, "sluice.bogus (i32) -> i32"},
		{FuncInfo{Name: "pair", Signature: Signature{Params: []ValueType{I64, F32, F64}, Results: []ValueType{I32, I32}}}, "pair (i64, f32, f64) -> (i32, i32)"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	a := Signature{Params: []ValueType{I32}}
	if !a.Equal(Signature{Params: []ValueType{I32}}) || a.Equal(Signature{Params: []ValueType{I64}}) || a.Equal(Signature{Params: []ValueType{I32}, Results: []ValueType{I32}}) {
		t.Error("Signature.Equal is wrong")
	}
}

func TestHostPanicCause(t *testing.T) {
	he := &HostError{Func: "m.f", Reason: "bad"}
	if got := (&hostPanic{fn: "m.f", value: he}).cause(); got != error(he) {
		t.Errorf("a *HostError is rewrapped: %v", got)
	}
	plain := errors.New("plain")
	got := (&hostPanic{fn: "m.g", value: plain}).cause()
	if !errors.Is(got, plain) || got.Error() != "host function m.g: plain" {
		t.Errorf("plain error cause = %v", got)
	}
	got = (&hostPanic{fn: "m.h", value: 42}).cause()
	if !strings.Contains(got.Error(), "host function m.h panicked: 42") {
		t.Errorf("non-error cause = %v", got)
	}
}
