package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkMatVecK: single-token K-quant matrix-vector products over a
// matrix several times L3, in huge pages (as the engine keeps weights),
// for comparison with BenchmarkMatVecQ4 in the same run.
func BenchmarkMatVecK(b *testing.B) {
	a := NewWeightArena()
	defer a.Close()
	r := rand.New(rand.NewPCG(1, 2))
	rows, cols := 65536, 2048
	x := randVec(r, cols, 1)
	y := make([]float32, rows)
	for _, dt := range []DType{Q4_K, Q5_K, Q6_K} {
		w0, _ := randMatrix(b, r, dt, rows, cols)
		w, err := NewMatrixIn(a, dt, rows, cols, a.Copy(w0.Data, false))
		if err != nil {
			b.Fatal(err)
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads%d", dt, threads), func(b *testing.B) {
				ctx := NewCtx(threads)
				defer ctx.Close()
				for b.Loop() {
					if err := ctx.MatMul(x, 1, Out{w, y}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
