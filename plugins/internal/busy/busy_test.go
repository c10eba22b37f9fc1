package busy

import "testing"

// TestSpinDeterministic: the work's result depends only on its argument,
// and more work is a longer chain (a different result).
func TestSpinDeterministic(t *testing.T) {
	if a, b := Spin(1000), Spin(1000); a != b {
		t.Errorf("Spin(1000) returned %d, then %d", a, b)
	}
	if Spin(1000) == Spin(2000) {
		t.Error("Spin(1000) == Spin(2000): the loop did not run")
	}
	if Spin(0) != 1 {
		t.Errorf("Spin(0) = %d, want 1 (no iteration)", Spin(0))
	}
}

// BenchmarkSpin measures a nominal microsecond of busy work: read ns/op
// against 1,000.
func BenchmarkSpin(b *testing.B) {
	for b.Loop() {
		Spin(1000)
	}
}
