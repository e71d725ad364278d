package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkStream: GEMV/GEMM over 256 MB of weights (out of cache).
func BenchmarkStream(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 5632, 2048
	for _, dt := range []DType{F16, Q8_0, Q4_0} {
		w0, _ := randMatrix(b, r, dt, rows, cols)
		n := max(2, (256<<20)/len(w0.Data))
		ws := make([]*Matrix, n)
		for i := range ws {
			d := make([]byte, len(w0.Data))
			copy(d, w0.Data)
			ws[i], _ = NewMatrix(dt, rows, cols, d)
		}
		for _, T := range []int{1, 4, 16} {
			x := randVec(r, T*cols, 1)
			y := make([]float32, T*rows)
			b.Run(fmt.Sprintf("%s/T%d", dt, T), func(b *testing.B) {
				ctx := NewCtx(1)
				defer ctx.Close()
				i := 0
				for b.Loop() {
					ctx.MatMul(x, T, Out{ws[i%n], y})
					i++
				}
				b.ReportMetric(float64(len(w0.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				b.ReportMetric(2*float64(rows*cols*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func TestZZBW(t *testing.T) {
	for _, th := range []int{1, 2} {
		r, err := MemBandwidth(th, 512<<20, 5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("threads %d: %v best %.2f median %.2f", th, r.GBps, r.Best(), r.Median())
	}
}
