package pipeline

import (
	"fmt"
	"path"
	"strings"
)

// Grants open an operator's sandbox (abi/ABI.md section 6): by default a
// guest sees no wall clock, no entropy, no environment variables and no
// files, and its clock and random stream follow the event it works on, so
// that a re-executed record or operation gives the same result. Each grant
// gives that up for what it opens, except Env.
type Grants struct {
	// Clock: the host's clocks (realtime and monotonic), and sleeps that
	// really wait.
	Clock bool `yaml:"clock"`
	// Entropy: random_get from the operating system's random source.
	Entropy bool `yaml:"entropy"`
	// Env: environment variables, the same in every instance.
	Env map[string]string `yaml:"env"`
	// Dirs: host directories the guest opens under an absolute path.
	Dirs []GrantDir `yaml:"dirs"`
}

// GrantDir is one granted host directory.
type GrantDir struct {
	// Host is the directory on the host, relative to the pipeline file.
	Host string `yaml:"host"`
	// Guest is the absolute path the guest opens it as.
	Guest string `yaml:"guest"`
	// Writable lets the guest create and change files; default read-only.
	Writable bool `yaml:"writable"`
}

// Nondeterministic reports whether the grants let a guest's results depend
// on when or where it runs: a clock, entropy or a writable directory.
func (g *Grants) Nondeterministic() bool {
	if g == nil {
		return false
	}
	if g.Clock || g.Entropy {
		return true
	}
	for _, d := range g.Dirs {
		if d.Writable {
			return true
		}
	}
	return false
}

// validateGrants checks operator i's grants and resolves their host
// directories against the pipeline file's.
func (p *Pipeline) validateGrants(i int, g *Grants) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"operators", i, "grants"}, key...)...))
	}
	for name, v := range g.Env {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			at(fmt.Sprintf("environment variable name %q: want a non-empty name without = or NUL", name), "env")
		case strings.ContainsRune(v, 0):
			at(fmt.Sprintf("environment variable %s: its value holds a NUL byte", name), "env", name)
		}
	}
	guests := map[string]bool{}
	for j := range g.Dirs {
		d := &g.Dirs[j]
		if d.Host == "" {
			at("a granted directory needs host: the directory on the host", "dirs", j)
		} else {
			d.Host = p.resolve(d.Host)
		}
		switch {
		case d.Guest == "":
			at("a granted directory needs guest: the absolute path the guest opens it as, such as /data", "dirs", j)
		case !path.IsAbs(d.Guest):
			at(fmt.Sprintf("guest %q: want an absolute path such as /data", d.Guest), "dirs", j, "guest")
		case guests[path.Clean(d.Guest)]:
			at(fmt.Sprintf("guest %q is granted twice", d.Guest), "dirs", j, "guest")
		}
		guests[path.Clean(d.Guest)] = true
	}
	return errs
}
