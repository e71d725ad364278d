package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestQ4Kx16x8MatchesFourTokenKernel: the eight-token kernel gives tokens
// 0-3 and 4-7 the four-token kernel's bits, for several super-block counts,
// in both roundings, on random blocks and on extreme ones (all quant bits
// set, largest scales and mins, activations at -128 / 127).
func TestQ4Kx16x8MatchesFourTokenKernel(t *testing.T) {
	if !hasVNNI {
		t.Skip("CPU without AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(29, 7))
	for _, nb := range []int{1, 2, 3, 8, 22} {
		for trial := 0; trial < 4; trial++ {
			extreme := trial == 0
			w := randQ4Kx8Groups(rng, 2, nb, extreme)
			xk := randActQ8K(rng, 8, nb, extreme)
			for _, gemm := range []bool{false, true} {
				var got [128]float32
				if !q4Kx16x8(w, nb, xk.Q, xk.D, xk.BSums, gemm, &got) {
					t.Fatal("q4Kx16x8 not done on a VNNI CPU")
				}
				for h := 0; h < 2; h++ {
					t0 := 4 * h
					var want [64]float32
					q4Kx16x4(w, nb, xk.Q[t0*nb*QKK:], xk.D[t0*nb:], xk.BSums[16*t0*nb:], gemm, &want)
					for i, b := range want {
						if a := got[16*t0+i]; !bitsEqual(a, b) {
							t.Fatalf("nb %d trial %d gemm=%v token %d row %d: eight-token %v, four-token %v", nb, trial, gemm, t0+i/16, i%16, a, b)
						}
					}
				}
			}
		}
	}
}

// BenchmarkQ4Kx16x8: eight tokens against 16 L1/L2-resident rows of 2048
// columns, by the eight-token kernel and by two calls of the four-token
// one; Gv/s is weight values times tokens per second.
func BenchmarkQ4Kx16x8(b *testing.B) {
	if !hasVNNI {
		b.Skip("CPU without AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(31, 9))
	const nb = 8
	w := randQ4Kx8Groups(rng, 2, nb, false)
	xk := randActQ8K(rng, 8, nb, false)
	for _, gemm := range []bool{false, true} {
		b.Run(fmt.Sprintf("x8/gemm%v", gemm), func(b *testing.B) {
			var out [128]float32
			for b.Loop() {
				q4Kx16x8(w, nb, xk.Q, xk.D, xk.BSums, gemm, &out)
			}
			b.ReportMetric(float64(16*nb*QKK*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gv/s")
		})
		b.Run(fmt.Sprintf("x4x2/gemm%v", gemm), func(b *testing.B) {
			var out [64]float32
			for b.Loop() {
				q4Kx16x4(w, nb, xk.Q, xk.D, xk.BSums, gemm, &out)
				q4Kx16x4(w, nb, xk.Q[4*nb*QKK:], xk.D[4*nb:], xk.BSums[16*4*nb:], gemm, &out)
			}
			b.ReportMetric(float64(16*nb*QKK*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gv/s")
		})
	}
}

// TestQ4KBatchMatchesOneToken: a packed q4_K product of T tokens, which
// takes them eight, four and one at a time, gives every token the bits of
// the product of that token alone, over token counts with remainders,
// group counts odd and even (and beyond one cache block of groups),
// super-block counts, threads and roundings, uniform and mixed.
func TestQ4KBatchMatchesOneToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 11))
	for _, shape := range []struct{ rows, cols int }{{8, 256}, {24, 768}, {104, 2048}, {64, 5632}} {
		w, _ := randMatrix(t, rng, Q4_K, shape.rows, shape.cols)
		if w.k4 == nil {
			t.Fatal("q4_K matrix not packed")
		}
		for _, T := range []int{1, 5, 8, 9, 12, 16, 19, 27} {
			x := randVec(rng, T*shape.cols, 1)
			for _, pattern := range []string{"gemv", "gemm", "mixed"} {
				modes := make([]RowMode, T)
				for i := range modes {
					switch {
					case pattern == "gemm", pattern == "mixed" && (i < 9 || i%5 == 0):
						modes[i] = RowGemm4 | RowSgemm
					}
				}
				for _, threads := range []int{1, 2} {
					ctx := NewCtx(threads)
					y := make([]float32, T*shape.rows)
					if err := ctx.MatMulGGML(x, T, modes, Out{w, y}); err != nil {
						t.Fatal(err)
					}
					one := make([]float32, shape.rows)
					for tok := 0; tok < T; tok++ {
						if err := ctx.MatMulGGML(x[tok*shape.cols:(tok+1)*shape.cols], 1, modes[tok:tok+1], Out{w, one}); err != nil {
							t.Fatal(err)
						}
						for r, want := range one {
							if got := y[tok*shape.rows+r]; !bitsEqual(got, want) {
								t.Fatalf("%dx%d T %d %s threads %d token %d row %d: batch %v, alone %v", shape.rows, shape.cols, T, pattern, threads, tok, r, got, want)
							}
						}
					}
					ctx.Close()
				}
			}
		}
	}
}
