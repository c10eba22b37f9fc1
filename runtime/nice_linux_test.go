package runtime

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// niceness reads a process's niceness from its stat line (proc(5): the
// 19th field; the 2nd, the command, is in parentheses and may hold
// spaces).
func niceness(t *testing.T, stat string) int {
	t.Helper()
	i := strings.LastIndexByte(stat, ')')
	fields := strings.Fields(stat[i+1:]) // from the 3rd field on
	if i < 0 || len(fields) < 17 {
		t.Fatalf("stat line %q: no niceness", stat)
	}
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatalf("stat line %q: niceness: %v", stat, err)
	}
	return n
}

// The child runs at the niceness asked, and so do the processes it
// starts; the parent's own is unchanged.
func TestStartNicedLowersTheChildOnly(t *testing.T) {
	own, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	before := niceness(t, string(own))
	// The child reads its niceness once told to, as a compile child
	// starts once it has its request.
	cmd := exec.Command("sh", "-c", "read go; cat /proc/self/stat")
	var out strings.Builder
	cmd.Stdout = &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := startNiced(cmd, LowestNice); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := niceness(t, out.String()); got != LowestNice {
		t.Errorf("the child runs at niceness %d, want %d", got, LowestNice)
	}
	own, err = os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if after := niceness(t, string(own)); after != before {
		t.Errorf("the parent's niceness went from %d to %d", before, after)
	}
}
