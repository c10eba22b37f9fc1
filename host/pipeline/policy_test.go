package pipeline

import (
	"strings"
	"testing"
)

func TestParseFailurePolicyAndSwapKeys(t *testing.T) {
	y := strings.Replace(good, "    kind: keyed\n", "    kind: keyed\n    retries: 2\n    quarantine_after: 5\n    rollback_batches: 0\n", 1) +
		"http:\n  token: s3cret\n"
	p, err := Parse("wc.yaml", "/pipes", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	split, count := p.Operators[0], p.Operators[1]
	if *split.RollbackBatches != DefaultRollbackBatches || split.Retries != 0 || split.QuarantineAfter != 0 {
		t.Errorf("defaults: rollback_batches %d retries %d quarantine_after %d", *split.RollbackBatches, split.Retries, split.QuarantineAfter)
	}
	if *count.RollbackBatches != 0 || count.Retries != 2 || count.QuarantineAfter != 5 {
		t.Errorf("set: rollback_batches %d retries %d quarantine_after %d", *count.RollbackBatches, count.Retries, count.QuarantineAfter)
	}
	if p.HTTP.Token != "s3cret" {
		t.Errorf("http.token %q", p.HTTP.Token)
	}
}

func TestParseFailurePolicyErrors(t *testing.T) {
	for key, want := range map[string]string{
		"retries: -1":          "retries -1: want 0 or more",
		"quarantine_after: -2": "quarantine_after -2",
		"rollback_batches: -3": "rollback_batches -3",
	} {
		y := strings.Replace(good, "    kind: keyed\n", "    kind: keyed\n    "+key+"\n", 1)
		_, err := Parse("wc.yaml", "/pipes", []byte(y))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "wc.yaml:") {
			t.Errorf("%s: error %v, want one naming the file and saying %q", key, err, want)
		}
	}
}
