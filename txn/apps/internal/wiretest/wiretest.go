package wiretest

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// RejectsDamage checks that decode refuses every proper prefix of the
// valid encoding b and b with a byte appended, each with a *FieldError
// that wraps ErrMalformed, and that it accepts b itself.
func RejectsDamage(t *testing.T, b []byte, decode func([]byte) error) {
	t.Helper()
	if err := decode(b); err != nil {
		t.Fatalf("valid input %x: %v", b, err)
	}
	for n := range len(b) {
		Malformed(t, b[:n], decode, "")
	}
	Malformed(t, append(b[:len(b):len(b)], 0), decode, "end")
}

// Malformed checks that decode refuses b with a *FieldError wrapping
// ErrMalformed that names field (any field when field is empty).
func Malformed(t *testing.T, b []byte, decode func([]byte) error, field string) {
	t.Helper()
	err := decode(b)
	var fe *wire.FieldError
	switch {
	case err == nil:
		t.Errorf("input %x decoded; want an error", b)
	case !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &fe):
		t.Errorf("input %x: error %v is not a *FieldError wrapping ErrMalformed", b, err)
	case field != "" && fe.Field != field:
		t.Errorf("input %x: error %q names field %q, want %q", b, err, fe.Field, field)
	}
}
