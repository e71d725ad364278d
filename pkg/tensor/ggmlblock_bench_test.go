package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkGGMLF16Block: the batched-decode f16 kernel over a matrix that
// fits in L2 (compute rate) and one that does not (memory + compute), for
// 4 and 16 tokens. GFLOP/s = 2*rows*cols*T per op.
func BenchmarkGGMLF16Block(b *testing.B) {
	if !hasSgemmF16 || GGMLLanes() != 16 {
		b.Skip("needs AVX-512")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int{128, 4096} {
		for _, T := range []int{4, 16} {
			cols := 2048
			w, _ := randMatrix(b, r, F16, rows, cols)
			x := randVec(r, T*cols, 1)
			y := make([]float32, T*rows)
			b.Run(fmt.Sprintf("rows%d_T%d", rows, T), func(b *testing.B) {
				var acc [][ggmlTok * 64]float32
				for b.Loop() {
					acc = ggmlF16Block(w, 0, rows, x, T, y, acc)
				}
				b.ReportMetric(float64(2*rows*cols*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSgemmF16Block: the prefill f16 kernel (tinyBLAS rounding) over
// a matrix larger than L2, 64 and 256 tokens.
func BenchmarkSgemmF16Block(b *testing.B) {
	if !hasSgemmF16 || GGMLLanes() != 16 {
		b.Skip("needs AVX-512")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, T := range []int{64, 256} {
		rows, cols := 4096, 2048
		w, _ := randMatrix(b, r, F16, rows, cols)
		x := randVec(r, T*cols, 1)
		y := make([]float32, T*rows)
		toks := make([]int, T)
		for i := range toks {
			toks[i] = i
		}
		b.Run(fmt.Sprintf("rows%d_T%d", rows, T), func(b *testing.B) {
			for b.Loop() {
				sgemmF16Block(w, 0, rows, x, toks, y)
			}
			b.ReportMetric(float64(2*rows*cols*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkDotQ8Rows: single-token q8_0 rows, one row per call (one FMA
// chain) against two (dotQ8x2) adjacent or half the matrix apart, in L2
// and out of the caches (rows-N: the matrix copied to huge pages).
func BenchmarkDotQ8Rows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int{64, 16384, -16384} {
		cols := 2048
		huge := rows < 0
		rows = max(rows, -rows)
		w, _ := randMatrix(b, r, Q8_0, rows, cols)
		if huge {
			a := NewWeightArena()
			if a == nil {
				continue
			}
			defer a.Close()
			w.Data = a.Copy(w.Data, false)
			rows = -rows
		}
		x := randVec(r, cols, 1)
		xq := make([]int8, cols)
		xd := make([]float32, cols/QK)
		QuantizeActQ8(x, xq, xd)
		name := rows
		rows = max(rows, -rows)
		y := make([]float32, rows)
		rb := w.rowBytes
		b.Run(fmt.Sprintf("rows%d_x1", name), func(b *testing.B) {
			for b.Loop() {
				for i := 0; i < rows; i++ {
					y[i] = dotQ8(w.Data[i*rb:(i+1)*rb], xq, xd)
				}
			}
			b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		b.Run(fmt.Sprintf("rows%d_x2", name), func(b *testing.B) {
			var out [2]float32
			for b.Loop() {
				for i := 0; i < rows; i += 2 {
					dotQ8x2(w.Data[i*rb:(i+2)*rb], rb, xq, xd, &out)
					y[i], y[i+1] = out[0], out[1]
				}
			}
			b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
		b.Run(fmt.Sprintf("rows%d_x2far", name), func(b *testing.B) {
			var out [2]float32
			h := rows / 2
			for b.Loop() {
				for i := 0; i < h; i++ {
					dotQ8x2(w.Data[i*rb:], h*rb, xq, xd, &out)
					y[i], y[i+h] = out[0], out[1]
				}
			}
			b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkMatVecQ4: single-token q4_0 over a matrix several times the
// caches (L3 here is 32 MB), repacked into huge pages as the model loader
// does.
func BenchmarkMatVecQ4(b *testing.B) {
	a := NewWeightArena()
	defer a.Close()
	r := rand.New(rand.NewPCG(1, 2))
	rows, cols := 131072, 2048 // 151 MB packed: several times L3
	w0, _ := randMatrix(b, r, Q4_0, rows, cols)
	w, err := NewMatrixIn(a, Q4_0, rows, cols, w0.Data)
	if err != nil {
		b.Fatal(err)
	}
	x := randVec(r, cols, 1)
	y := make([]float32, rows)
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads%d", threads), func(b *testing.B) {
			ctx := NewCtx(threads)
			defer ctx.Close()
			for b.Loop() {
				if err := ctx.MatMul(x, 1, Out{w, y}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(w.q4))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkF16Rows1: single-token f16 rows (DotF16GGML's bits) over a
// matrix several times the caches, in huge pages: the per-row kernel
// against ggmlF16Block with one token.
func BenchmarkF16Rows1(b *testing.B) {
	if !hasSgemmF16 || GGMLLanes() != 16 {
		b.Skip("needs AVX-512")
	}
	a := NewWeightArena()
	defer a.Close()
	r := rand.New(rand.NewPCG(1, 2))
	rows, cols := 32768, 2048
	w, _ := randMatrix(b, r, F16, rows, cols)
	w.Data = a.Copy(w.Data, false)
	x := randVec(r, cols, 1)
	x16 := make([]uint16, cols)
	for i, v := range x {
		x16[i] = F32ToF16(v)
		x[i] = F16ToF32(x16[i])
	}
	y := make([]float32, rows)
	b.Run("dotrows", func(b *testing.B) {
		for b.Loop() {
			for i := 0; i < rows; i++ {
				y[i] = DotF16GGML(bytesAsU16(w.Row(i)), x16)
			}
		}
		b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
	b.Run("block", func(b *testing.B) {
		var acc [][ggmlTok * 64]float32
		for b.Loop() {
			acc = ggmlF16Block(w, 0, rows, x, 1, y, acc)
		}
		b.ReportMetric(float64(len(w.Data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}
