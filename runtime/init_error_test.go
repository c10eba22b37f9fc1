package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// initLoopModule exports an _initialize that loops forever.
func initLoopModule() []byte {
	return wasmModule{start: -1, funcs: []wasmFunc{{export: "_initialize",
		body: []byte{opLoop, blockEmpty, opBr, 0, opEnd}}}}.encode()
}

// A failed initialiser is a link error whose cause is the call's own
// *Error: errors.Is reaches the sentinel of what happened, errors.As the
// inner *Error, and the message says it once.
func TestInitFailureKeepsItsCause(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm []byte
		is   error
		kind ErrorKind
		want string
	}{
		{"trap", initTrapModule(), ErrTrap, KindTrap, "unreachable"},
		{"timeout", initLoopModule(), ErrTimeout, KindTimeout, "ran past its timeout of 50ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, testConfig().WithCallTimeout(50*time.Millisecond))
			_, err := compile(t, e, "initfail", tc.wasm).Instantiate(context.Background())
			ce := asError(t, err)
			checkError(t, ce, KindLink, "initfail", "_initialize", "link error: ", tc.want)
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(err, %v) = false: %v", tc.is, err)
			}
			var inner *Error
			if !errors.As(ce.Err, &inner) || inner.Kind != tc.kind {
				t.Errorf("the cause of %v is not an *Error of kind %v", err, tc.kind)
			}
			if n := strings.Count(err.Error(), `plugin "initfail"`); n != 1 {
				t.Errorf("the message names the plugin %d times: %v", n, err)
			}
		})
	}
}
