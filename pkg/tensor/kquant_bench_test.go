package tensor

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time: on a shared machine a
// kernel's CPU time per call varies much less than its wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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

// BenchmarkMatMulKBatch: K-quant products of 16 tokens (a prefill
// chunk's tokens in llama.cpp's gemm rounding, or 16 sequences' decode
// tokens in its gemv rounding) and of one token, on one thread, over a
// 4096x2048 matrix (L3-sized: kernel speed rather than memory speed);
// Gv/cpu-s is weight values times tokens per CPU second of the process.
func BenchmarkMatMulKBatch(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	rows, cols := 4096, 2048
	x := randVec(r, 16*cols, 1)
	y := make([]float32, 16*rows)
	ctx := NewCtx(1)
	defer ctx.Close()
	for _, dt := range []DType{Q4_K, Q5_K, Q6_K} {
		w, _ := randMatrix(b, r, dt, rows, cols)
		for _, tc := range []struct {
			T    int
			mode RowMode
		}{{16, RowSgemm | RowGemm4}, {16, 0}, {1, 0}} {
			modes := make([]RowMode, tc.T)
			for i := range modes {
				modes[i] = tc.mode
			}
			b.Run(fmt.Sprintf("%s/T%d/gemm%v", dt, tc.T, tc.mode&RowGemm4 != 0), func(b *testing.B) {
				c0 := cpuTime(b)
				for b.Loop() {
					if err := ctx.MatMulGGML(x[:tc.T*cols], tc.T, modes, Out{w, y}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rows*cols*tc.T)*float64(b.N)/(cpuTime(b)-c0).Seconds()/1e9, "Gv/cpu-s")
			})
		}
	}
}

// BenchmarkMatVecKStack: one token through eight TinyLlama-shaped layers of
// q4_K matrices (q, k, v, o, gate, up: 146 MB, out of cache) in turn, as a
// decode step reads them, at one and two threads. Unlike BenchmarkMatVecK's
// single large matrix it pays what every matmul of a step pays: the split
// of each matrix over the workers (interleaved chunks read a fifth slower
// than one contiguous run per worker, Pool.regions).
func BenchmarkMatVecKStack(b *testing.B) {
	a := NewWeightArena()
	defer a.Close()
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][2]int{{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}}
	var ws []*Matrix
	total := 0
	for range 8 {
		for _, s := range shapes {
			w0, _ := randMatrix(b, r, Q4_K, s[0], s[1])
			w, err := NewMatrixIn(a, Q4_K, s[0], s[1], a.Copy(w0.Data, false))
			if err != nil {
				b.Fatal(err)
			}
			ws = append(ws, w)
			total += len(w.Data)
		}
	}
	x := randVec(r, 2048, 1)
	y := make([]float32, 5632)
	benchStream(b, total, ws, func(ctx *Ctx, w *Matrix) error { return ctx.MatMul(x, 1, Out{w, y[:w.Rows]}) })
}

// benchStream times one pass of mul over ws, in order, at one and two
// threads, and reports the weight bytes (total per pass) read per second.
func benchStream(b *testing.B, total int, ws []*Matrix, mul func(*Ctx, *Matrix) error) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads%d", threads), func(b *testing.B) {
			ctx := NewCtx(threads)
			defer ctx.Close()
			for b.Loop() {
				for _, w := range ws {
					if err := mul(ctx, w); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkDecodeStreamQ4KM: one token through every matrix of the
// TinyLlama-shaped Q4_K_M file (scripts/bench-cpu.sh's 1B model: q4_K, with
// attn_v and ffn_down in q6_K on llama.cpp's use_more_bits layers and the
// output head in q6_K; 643 MB) in the order and arena layout a decode step
// reads them, at one and two threads. It is the weight stream of a decode
// step without the rest of the step (attention, norms, sampling: about 5% at
// one thread), so the one-token kernels' streaming can be compared with
// `lightllm membw` in one process; a matrix that fits in L3 or a single
// large one (BenchmarkMatVecK, which the L3 partly holds from pass to pass)
// reads faster than a step does.
func BenchmarkDecodeStreamQ4KM(b *testing.B) {
	a := NewWeightArena()
	defer a.Close()
	r := rand.New(rand.NewPCG(5, 6))
	const H, KV, F, V, L = 2048, 256, 5632, 32000, 22
	var ws []*Matrix
	total := 0
	add := func(dt DType, rows, cols int) {
		raw := randKBlocks(r, dt, rows*cols/QKK, false)
		w, err := NewMatrixIn(a, dt, rows, cols, raw)
		if err != nil {
			b.Fatal(err)
		}
		if dt != Q4_K {
			w.Data = a.Copy(raw, false)
		}
		ws = append(ws, w)
		total += len(raw)
	}
	add(Q6_K, V, H) // loaded first, read last (model.loadGGUF)
	for i := range L {
		vd := Q4_K
		if i < L/8 || i >= 7*L/8 || (i-L/8)%3 == 2 {
			vd = Q6_K
		}
		add(Q4_K, H, H)
		add(Q4_K, KV, H)
		add(vd, KV, H)
		add(Q4_K, H, H)
		add(Q4_K, F, H)
		add(Q4_K, F, H)
		add(vd, H, F)
	}
	ws = append(ws[1:], ws[0])
	x := randVec(r, F, 1)
	y := make([]float32, V)
	benchStream(b, total, ws, func(ctx *Ctx, w *Matrix) error {
		return ctx.MatMulGGML(x[:w.Cols], 1, nil, Out{w, y[:w.Rows]})
	})
}
