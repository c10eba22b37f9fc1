//go:build !wasip1

package sluice

import (
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/abi"
)

func TestLogReachesTheActiveHost(t *testing.T) {
	host := newRecHost()
	n := nativeGuest{newGuest(&handlers{kind: kindMap, mapFn: func(r Record) (Record, error) {
		Logf(LevelInfo, "saw %s", r.Key)
		return r, nil
	}}, host)}
	batch := encode(kv("k", "v"))
	region := n.Alloc(int32(len(batch)))
	copy(region, batch)
	if st := n.Process(region); st != abi.StatusOK {
		t.Fatalf("status %d", st)
	}
	if fmt.Sprint(host.logs) != "[1:saw k]" {
		t.Errorf("logs = %v", host.logs)
	}
	if active.Load() != nil {
		t.Error("active guest not cleared after the call")
	}
}
