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
