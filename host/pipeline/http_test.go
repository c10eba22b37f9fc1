package pipeline

import (
	"strings"
	"testing"
	"time"
)

func TestParseHTTPLimits(t *testing.T) {
	p, err := Parse("wc.yaml", "/pipes", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := HTTP{Addr: DefaultHTTPAddr, Auth: AuthWrites, MaxBodyBytes: DefaultHTTPMaxBodyBytes, MaxConnections: DefaultHTTPMaxConnections,
		ReadTimeout: Duration(DefaultHTTPReadTimeout), WriteTimeout: Duration(DefaultHTTPWriteTimeout), IdleTimeout: Duration(DefaultHTTPIdleTimeout)}
	if p.HTTP != want {
		t.Errorf("defaults: http %+v, want %+v", p.HTTP, want)
	}
	y := good + "http:\n  addr: 0.0.0.0:9090\n  auth: all\n  max_body_bytes: 8MiB\n  max_connections: 16\n  read_timeout: 30s\n  write_timeout: 2m\n  idle_timeout: 5s\n"
	if p, err = Parse("wc.yaml", "/pipes", []byte(y)); err != nil {
		t.Fatal(err)
	}
	want = HTTP{Addr: "0.0.0.0:9090", Auth: AuthAll, MaxBodyBytes: 8 << 20, MaxConnections: 16,
		ReadTimeout: Duration(30 * time.Second), WriteTimeout: Duration(2 * time.Minute), IdleTimeout: Duration(5 * time.Second)}
	if p.HTTP != want {
		t.Errorf("set: http %+v, want %+v", p.HTTP, want)
	}
}

func TestParseHTTPErrors(t *testing.T) {
	for key, want := range map[string]string{
		"auth: reads":          `http.auth: unknown auth "reads": want writes`,
		"max_connections: -1":  "http.max_connections: max_connections -1: want at least 1",
		"max_body_bytes: lots": `"lots" is not a size`,
		"read_timeout: soon":   `"soon" is not a duration`,
		"idle_timeout: -1s":    `"-1s" is not a duration`,
		"max_body: 1MiB":       `unknown key "max_body" in http (known: addr, token, auth, max_body_bytes`,
	} {
		_, err := Parse("wc.yaml", "/pipes", []byte(good+"http:\n  "+key+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "wc.yaml:") {
			t.Errorf("%s: error %v, want one naming the file and saying %q", key, err, want)
		}
	}
}
