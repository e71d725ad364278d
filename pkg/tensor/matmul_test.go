package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

func randMatrix(t testing.TB, r *rand.Rand, dt DType, rows, cols int) (*Matrix, []float32) {
	t.Helper()
	w := randVec(r, rows*cols, 1)
	enc, err := Quantize(dt, w)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(dt, rows, cols, enc)
	if err != nil {
		t.Fatal(err)
	}
	dec := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		m.DequantizeRow(i, dec[i*cols:(i+1)*cols])
	}
	return m, dec
}

func TestMatMulMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, threads := range []int{1, 3} {
		ctx := NewCtx(threads)
		for _, dt := range []DType{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K} {
			for _, shape := range [][3]int{{1, 64, 96}, {5, 256, 128}, {33, 64, 512}, {3, 72, 768}} {
				T, rows, cols := shape[0], shape[1], shape[2]
				if cols%dt.BlockLen() != 0 {
					continue
				}
				w1, d1 := randMatrix(t, r, dt, rows, cols)
				w2, d2 := randMatrix(t, r, dt, rows/2, cols)
				x := randVec(r, T*cols, 1)
				y1 := make([]float32, T*rows)
				y2 := make([]float32, T*rows/2)
				if err := ctx.MatMul(x, T, Out{w1, y1}, Out{w2, y2}); err != nil {
					t.Fatal(err)
				}
				// Quantized weights see q8_0 activations; compare with the
				// exact product and a tolerance covering that rounding.
				tol := 1e-4
				if dt.Quantized() {
					tol = 0.02
				}
				for _, c := range []struct {
					y   []float32
					d   []float32
					rws int
				}{{y1, d1, rows}, {y2, d2, rows / 2}} {
					for tk := 0; tk < T; tk++ {
						for i := 0; i < c.rws; i++ {
							want := refDot(c.d[i*cols:(i+1)*cols], x[tk*cols:(tk+1)*cols])
							got := c.y[tk*c.rws+i]
							if math.Abs(float64(got)-want) > tol*math.Sqrt(float64(cols)) {
								t.Fatalf("threads=%d %s %v: y[%d][%d]=%v want %v", threads, dt, shape, tk, i, got, want)
							}
						}
					}
				}
			}
		}
		ctx.Close()
	}
}

// TestMatMulBatchInvariant: a token's outputs are bit-identical whether
// it is multiplied alone or with others, whatever the batch size, the
// thread count and the row tiling (the engine's results must not depend
// on what else is in the batch).
func TestMatMulBatchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, dt := range []DType{F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K} {
		// 72 rows: packed q4_0 groups; 70: q4_0 without packing, and row
		// counts that leave tails for the four-row kernels.
		for _, shape := range [][2]int{{72, 256}, {70, 96}, {9, 5632}} {
			rows, cols := shape[0], shape[1]
			if cols%dt.BlockLen() != 0 {
				continue
			}
			w, _ := randMatrix(t, r, dt, rows, cols)
			const T = 19
			x := randVec(r, T*cols, 1)
			alone := make([]float32, T*rows)
			ctx1 := NewCtx(1)
			for tk := 0; tk < T; tk++ {
				if err := ctx1.MatMul(x[tk*cols:(tk+1)*cols], 1, Out{w, alone[tk*rows : (tk+1)*rows]}); err != nil {
					t.Fatal(err)
				}
			}
			ctx1.Close()
			for _, threads := range []int{1, 3} {
				ctx := NewCtx(threads)
				for _, n := range []int{2, 3, 4, 5, 8, 13, 19} {
					y := make([]float32, n*rows)
					for t0 := 0; t0+n <= T; t0 += n {
						if err := ctx.MatMul(x[t0*cols:(t0+n)*cols], n, Out{w, y}); err != nil {
							t.Fatal(err)
						}
						for i := range y {
							if y[i] != alone[t0*rows+i] {
								t.Fatalf("%s %dx%d threads=%d batch %d: token %d row %d = %v, alone %v",
									dt, rows, cols, threads, n, t0+i/rows, i%rows, y[i], alone[t0*rows+i])
							}
						}
					}
				}
				ctx.Close()
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	ctx := NewCtx(1)
	defer ctx.Close()
	r := rand.New(rand.NewPCG(9, 9))
	w, _ := randMatrix(t, r, F32, 4, 8)
	w2, _ := randMatrix(t, r, F32, 4, 16)
	if err := ctx.MatMul(make([]float32, 8), 1, Out{w, make([]float32, 3)}); err == nil {
		t.Error("short output: no error")
	}
	if err := ctx.MatMul(make([]float32, 16), 1, Out{w, make([]float32, 4)}, Out{w2, make([]float32, 4)}); err == nil {
		t.Error("mismatched widths: no error")
	}
	if err := ctx.MatMul(make([]float32, 7), 1, Out{w, make([]float32, 4)}); err == nil {
		t.Error("short input: no error")
	}
	if _, err := NewMatrix(Q8_0, 2, 32, make([]byte, 10)); err == nil {
		t.Error("short matrix data: no error")
	}
}

func TestMatMulNoAllocs(t *testing.T) {
	ctx := NewCtx(2)
	defer ctx.Close()
	r := rand.New(rand.NewPCG(1, 1))
	w, _ := randMatrix(t, r, Q8_0, 512, 512)
	x := randVec(r, 4*512, 1)
	y := make([]float32, 4*512)
	ctx.MatMul(x, 4, Out{w, y})
	if n := testing.AllocsPerRun(20, func() { ctx.MatMul(x, 4, Out{w, y}) }); n != 0 {
		t.Errorf("MatMul allocates %v times per call", n)
	}
}

// countTask counts how often each index runs; late counts calls made
// while no Pool.Run of it was in progress (a helper that ran a job after
// Run returned).
type countTask struct {
	hits  []atomic.Int32
	inRun atomic.Bool
	late  atomic.Int32
}

func (c *countTask) Run(_, lo, hi int) {
	if !c.inRun.Load() {
		c.late.Add(1)
	}
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

func TestPoolCoversRangeOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		threads int
		pause   time.Duration // between jobs: past spinFor the helpers park
	}{
		{"4 threads back to back", 4, 0},
		{"4 threads parking", 4, 3 * spinFor},
		{"2 threads parking", 2, 3 * spinFor},
		// More workers than cores: helpers often get the job word after
		// Run has run out of chunks, and must skip that job.
		{"16 threads back to back", 16, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPool(tc.threads)
			defer p.Close()
			// Job sizes alternate between using every helper and only
			// some, so helpers skip jobs while others run them.
			for _, n := range []int{1, 2, 7, 100, 1001} {
				for _, grain := range []int{1, 3, 50} {
					c := &countTask{hits: make([]atomic.Int32, n)}
					for rep := 0; rep < 5; rep++ {
						c.inRun.Store(true)
						p.Run(c, n, grain)
						c.inRun.Store(false)
						time.Sleep(tc.pause)
					}
					if l := c.late.Load(); l != 0 {
						t.Fatalf("n=%d grain=%d: %d calls after Run returned", n, grain, l)
					}
					for i := range c.hits {
						if c.hits[i].Load() != 5 {
							t.Fatalf("n=%d grain=%d: index %d ran %d times", n, grain, i, c.hits[i].Load())
						}
					}
				}
			}
		})
	}
}

// BenchmarkMatMul reports GFLOP/s (2 flops per multiply-add) for decode
// (T=1) and prefill-like (T=64) shapes of a 2048x2048 matrix.
func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 2048, 2048
	for _, dt := range []DType{F32, F16, BF16, Q8_0, Q4_0} {
		w, _ := randMatrix(b, r, dt, rows, cols)
		for _, T := range []int{1, 64} {
			x := randVec(r, T*cols, 1)
			y := make([]float32, T*rows)
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/T%d/threads%d", dt, T, threads), func(b *testing.B) {
					ctx := NewCtx(threads)
					defer ctx.Close()
					b.SetBytes(int64(len(w.Data)))
					for b.Loop() {
						ctx.MatMul(x, T, Out{w, y})
					}
					b.ReportMetric(2*float64(rows*cols*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
