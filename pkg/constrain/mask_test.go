package constrain

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestApplyMask compares the run-copying mask with the one-logit-at-a-time
// definition over sparse, dense, empty and full masks, a kept id, and rows
// longer than the mask (ids past the tokenizer's).
func TestApplyMask(t *testing.T) {
	f := &Factory{}
	rng := rand.New(rand.NewPCG(1, 2))
	for name, tc := range map[string]struct {
		bits, row int
		density   float64
		keep      int32
	}{
		"sparse":            {1000, 1000, 0.002, -1},
		"dense":             {1000, 1000, 0.9, -1},
		"empty, keep":       {640, 640, 0, 17},
		"full":              {640, 640, 1, -1},
		"half":              {130, 130, 0.5, 3},
		"row past the mask": {100, 300, 0.3, -1},
	} {
		t.Run(name, func(t *testing.T) {
			bits := make([]uint64, (tc.bits+63)/64)
			for i := range tc.bits {
				if rng.Float64() < tc.density {
					bits[i/64] |= 1 << (i % 64)
				}
			}
			row := make([]float32, tc.row)
			for i := range row {
				row[i] = float32(i)
			}
			applyMask(row, bits, tc.keep, f.negs(len(row)))
			for i, v := range row {
				allowed := i < tc.bits && bits[i/64]>>(i%64)&1 == 1 || int32(i) == tc.keep
				if allowed != (v == float32(i)) || (!allowed && !math.IsInf(float64(v), -1)) {
					t.Fatalf("logit %d: %v (allowed %v)", i, v, allowed)
				}
			}
		})
	}
}

// BenchmarkApplyMask: a 128k row under a mask that allows 1 token in 1000
// (a JSON grammar between values).
func BenchmarkApplyMask(b *testing.B) {
	const n = 128256
	f := &Factory{}
	row := make([]float32, n)
	bits := make([]uint64, (n+63)/64)
	for i := 0; i < n; i += 1000 {
		bits[i/64] |= 1 << (i % 64)
	}
	for b.Loop() {
		applyMask(row, bits, -1, f.negs(n))
	}
}
