package coordination

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestKeepAtDividesTheRestEqually: cutting what remains with KeepAt(1),
// ..., KeepAt(Cuts) leaves the primary Keep of it and cuts off Cuts
// residuals of (1-Keep)/Cuts each, every keep at least a half (as
// driver.Splitter.TrySplit takes it) when the primary keeps at least an
// equal share.
func TestKeepAtDividesTheRestEqually(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.IntRange(0, 64).Draw(t, "parts")
		n := max(parts, 1)
		keep := rapid.Float64Range(1/float64(n+1), 0.999).Draw(t, "keep")
		r := CutRequested{Keep: keep, Parts: parts}
		if r.Cuts() != n {
			t.Fatalf("Cuts() = %d, want %d", r.Cuts(), n)
		}
		left := 1.0
		for i := 1; i <= n; i++ {
			k := r.KeepAt(i)
			if k < 0.5-1e-9 || k >= 1 {
				t.Fatalf("KeepAt(%d) = %v, outside [0.5, 1)", i, k)
			}
			residual := left * (1 - k)
			left *= k
			if want := (1 - keep) / float64(n); math.Abs(residual-want) > 1e-9 {
				t.Fatalf("cut %d cuts off %v, want %v", i, residual, want)
			}
		}
		if math.Abs(left-keep) > 1e-9 {
			t.Fatalf("the primary keeps %v, want %v", left, keep)
		}
	})
}
