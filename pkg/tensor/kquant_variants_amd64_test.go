package tensor

import (
	"math/rand/v2"
	"testing"
)

// TestQ6KRowsVariants runs every q6_K rows kernel this CPU can execute
// directly, not through the q6KRows dispatcher, so a kernel the dispatcher
// no longer picks here (q6KRowsVNNI where GFNI is present) stays checked:
// each gives q6KRowsAVX2's bits on random and extreme blocks (all quant
// bits set, largest scales, activations at -128 and 127), over 1, 3 and
// 22 blocks per row and 5 rows per call.
func TestQ6KRowsVariants(t *testing.T) {
	if !hasAVX2 {
		t.Skip("CPU without AVX2")
	}
	type rowsFn = func(w *byte, xq *int8, xd *float32, xbs *int16, nb int, rows int, out *float32)
	kernels := []struct {
		name string
		ok   bool
		fn   rowsFn
	}{
		{"VNNI 256-bit", hasVNNI, q6KRowsVNNI},
		{"VNNI 512-bit GFNI", hasVNNI && hasGFNI, q6KRowsZ},
	}
	const rows = 5
	rng := rand.New(rand.NewPCG(19, 66))
	for _, nb := range []int{1, 3, 22} {
		for trial := 0; trial < 6; trial++ {
			extreme := trial < 2
			xk := trialActQ8K(rng, nb, trial)
			w := randKBlocks(rng, Q6_K, rows*nb, extreme)
			run := func(fn rowsFn) []float32 {
				out := make([]float32, rows)
				fn(&w[0], &xk.Q[0], &xk.D[0], &xk.BSums[0], nb, rows, &out[0])
				return out
			}
			want := run(q6KRowsAVX2)
			for r := range want {
				if g := dotQ6KGeneric(w[r*nb*q6KBlockBytes:(r+1)*nb*q6KBlockBytes], xk.Q, xk.D, xk.BSums); !bitsEqual(g, want[r]) {
					t.Fatalf("nb %d trial %d row %d: AVX2 %v, portable %v", nb, trial, r, want[r], g)
				}
			}
			for _, k := range kernels {
				if !k.ok {
					continue
				}
				got := run(k.fn)
				for r := range got {
					if !bitsEqual(got[r], want[r]) {
						t.Fatalf("%s nb %d trial %d row %d: %v, AVX2 %v", k.name, nb, trial, r, got[r], want[r])
					}
				}
			}
		}
	}
}
