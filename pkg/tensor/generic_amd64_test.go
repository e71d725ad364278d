package tensor

import (
	"math/rand/v2"
	"testing"
)

// TestPortableKernels runs the matrix tests with the assembly switched off,
// so the portable kernels used on CPUs without AVX2 are exercised here too.
func TestPortableKernels(t *testing.T) {
	savedAVX2, savedVNNI := hasAVX2, hasVNNI
	hasAVX2, hasVNNI = false, false
	defer func() { hasAVX2, hasVNNI = savedAVX2, savedVNNI }()
	TestMatMulMatchesReference(t)
	TestMatMulBatchInvariant(t)
	TestQ4x8Kernels(t)
	TestDotX4MatchesSingle(t)
	TestMatMulGGMLKQuant(t) // the K-quant batch paths against llama.cpp
}

// TestVNNIMatchesAVX2: the AVX-512 VNNI kernels give bit-identical results
// to the AVX2 ones, so the numbers do not depend on the CPU generation.
func TestVNNIMatchesAVX2(t *testing.T) {
	if !hasVNNI {
		t.Skip("CPU without AVX-512 VNNI")
	}
	hasVNNI = false
	TestQ4x8Kernels(t) // the AVX2 kernel, up to four tokens
	hasVNNI = true
	r := rand.New(rand.NewPCG(11, 12))
	for _, dt := range []DType{Q8_0, Q4_0} {
		w, _ := randMatrix(t, r, dt, 64, 2048)
		for _, T := range []int{2, 5, 8, 17} {
			x := randVec(r, T*2048, 2)
			got, want := make([]float32, T*64), make([]float32, T*64)
			ctx := NewCtx(1)
			if err := ctx.MatMul(x, T, Out{w, got}); err != nil {
				t.Fatal(err)
			}
			hasVNNI = false
			err := ctx.MatMul(x, T, Out{w, want})
			hasVNNI = true
			ctx.Close()
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s T=%d: output %d: VNNI %v, AVX2 %v", dt, T, i, got[i], want[i])
				}
			}
		}
	}
}

// TestKQuantVNNIMatchesAVX2: the AVX-512 VNNI q4_K, q5_K and q6_K kernels give
// the AVX2 ones' bits on random and extreme blocks (all quant bits set,
// largest scales, activations at -128 and 127), and the K-quant tests
// pass on the AVX2 kernels too, so both paths stay checked on one CPU.
func TestKQuantVNNIMatchesAVX2(t *testing.T) {
	if !hasVNNI {
		t.Skip("CPU without AVX-512 VNNI")
	}
	defer func() { hasVNNI = true }()
	rng := rand.New(rand.NewPCG(19, 6))
	both := func(f func(out []float32), n int) (vnni, avx2 []float32) {
		vnni, avx2 = make([]float32, n), make([]float32, n)
		f(vnni)
		hasVNNI = false
		f(avx2)
		hasVNNI = true
		return vnni, avx2
	}
	for _, nb := range []int{1, 3, 22} {
		for trial := 0; trial < 6; trial++ {
			extreme := trial < 2
			xk := trialActQ8K(rng, nb, trial)
			w4 := randQ4Kx8Groups(rng, 3, nb, extreme)
			for _, gemm := range []bool{false, true} {
				v, a := both(func(out []float32) { q4Kx8Rows(w4, nb, xk.Q, xk.D, xk.S, gemm, out) }, 24)
				for i := range v {
					if !bitsEqual(v[i], a[i]) {
						t.Fatalf("q4_K nb %d trial %d gemm=%v row %d: VNNI %v, AVX2 %v", nb, trial, gemm, i, v[i], a[i])
					}
				}
			}
			for _, k := range []struct {
				dt   DType
				rows func(w []byte, xq []int8, xd []float32, xbs []int16, out []float32)
			}{{Q5_K, dotQ5KRows}, {Q6_K, dotQ6KRows}} {
				w := randKBlocks(rng, k.dt, 5*nb, extreme)
				v, a := both(func(out []float32) { k.rows(w, xk.Q, xk.D, xk.BSums, out) }, 5)
				for i := range v {
					if !bitsEqual(v[i], a[i]) {
						t.Fatalf("%s nb %d trial %d row %d: VNNI %v, AVX2 %v", k.dt, nb, trial, i, v[i], a[i])
					}
				}
			}
		}
	}
	hasVNNI = false
	TestQ4Kx8MatchesLlamaCpp(t)
	TestQ4Kx8x4MatchesOneToken(t)
	TestKDotx4MatchesOneToken(t)
	TestMatMulGGMLKQuant(t)
}

// TestQ4Kx16x4MatchesTwoGroups: the 512-bit kernel over two packed q4_K
// groups gives each group the 256-bit four-token kernel's bits, on random
// blocks and on extreme ones (all quant bits set, largest scales and mins,
// activations at -128 / 127).
func TestQ4Kx16x4MatchesTwoGroups(t *testing.T) {
	if !hasVNNI {
		t.Skip("CPU without AVX-512 VNNI")
	}
	rng := rand.New(rand.NewPCG(23, 5))
	for _, nb := range []int{1, 3, 22} {
		for trial := 0; trial < 5; trial++ {
			extreme := trial == 0
			gb := nb * q4Kx8GroupBytes
			w := randQ4Kx8Groups(rng, 2, nb, extreme)
			xk := randActQ8K(rng, 4, nb, extreme)
			for _, gemm := range []bool{false, true} {
				var got [64]float32
				if !q4Kx16x4(w, nb, xk.Q, xk.D, xk.BSums, gemm, &got) {
					t.Fatal("q4Kx16x4 not done on a VNNI CPU")
				}
				for g := 0; g < 2; g++ {
					var want [32]float32
					q4Kx8x4(w[g*gb:(g+1)*gb], nb, xk.Q, xk.D, xk.BSums, gemm, &want)
					for tok := 0; tok < 4; tok++ {
						for r := 0; r < 8; r++ {
							if a, b := got[16*tok+8*g+r], want[8*tok+r]; !bitsEqual(a, b) {
								t.Fatalf("nb %d trial %d gemm=%v group %d token %d row %d: 512-bit %v, 256-bit %v", nb, trial, gemm, g, tok, r, a, b)
							}
						}
					}
				}
			}
		}
	}
}

// trialActQ8K is one token's q8_K activations for trial number trial of a
// kernel comparison: trials 0 and 1 are extreme (all quants 127 in trial
// 1, the first -128, sums and S recomputed), the rest random.
func trialActQ8K(rng *rand.Rand, nb, trial int) *ActQ8K {
	extreme := trial < 2
	xk := randActQ8K(rng, 1, nb, extreme)
	if trial == 1 {
		for i := range xk.Q {
			xk.Q[i] = 127
		}
	}
	if extreme {
		xk.Q[0] = -128
		for i := range xk.BSums {
			xk.BSums[i] = 0
			for _, v := range xk.Q[16*i : 16*i+16] {
				xk.BSums[i] += int16(v)
			}
		}
		xk.fillS()
	}
	return xk
}
