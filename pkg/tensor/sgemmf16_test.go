package tensor

import (
	"math/rand/v2"
	"testing"
)

// TestSgemmF16BlockMatchesDot: the blocked f16 kernel gives DotF16Sgemm's
// bits for every (row, token), whatever the row and token counts.
func TestSgemmF16BlockMatchesDot(t *testing.T) {
	if !hasSgemmF16 || GGMLLanes() != 16 {
		t.Skip("needs AVX-512 (llama.cpp's 16-lane rounding)")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, shape := range [][2]int{{4, 16}, {13, 64}, {70, 2048}, {9, 5632}} {
		rows, cols := shape[0], shape[1]
		w, _ := randMatrix(t, r, F16, rows, cols)
		for _, T := range []int{1, 3, 5, 7, 12, 13} {
			x := randVec(r, T*cols, 2)
			x16 := make([]uint16, len(x))
			x32 := make([]float32, len(x))
			for i, v := range x {
				x16[i] = F32ToF16(v)
				x32[i] = F16ToF32(x16[i])
			}
			toks := make([]int, T)
			for i := range toks {
				toks[i] = T - 1 - i // any order: results go to each token's own row
			}
			y := make([]float32, T*rows)
			sgemmF16Block(w, 0, rows, x32, toks, y)
			for j, tk := range toks {
				for i := 0; i < rows; i++ {
					want := DotF16Sgemm(bytesAsU16(w.Row(i)), x16[j*cols:(j+1)*cols])
					if got := y[tk*rows+i]; got != want {
						t.Fatalf("%dx%d T=%d: row %d token %d = %v, DotF16Sgemm %v", rows, cols, T, i, j, got, want)
					}
				}
			}
		}
	}
}

// TestMatMulGGMLF16Blocked: MatMulGGML over f16 weights, with the blocked
// kernels on, gives each token exactly the per-pair kernel llama.cpp would
// use (DotF16Sgemm for sgemm tokens of a matrix with a multiple of 4 rows,
// DotF16GGML otherwise), for mixed batches and awkward shapes.
func TestMatMulGGMLF16Blocked(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	ctx := NewCtx(2)
	defer ctx.Close()
	for _, shape := range [][2]int{{8, 2048}, {6, 64}, {12, 80}} {
		rows, cols := shape[0], shape[1]
		w, _ := randMatrix(t, r, F16, rows, cols)
		const T = 9
		x := randVec(r, T*cols, 1)
		for _, flags := range [][]RowMode{nil, {RowSgemm, 0, RowSgemm, RowSgemm, 0, 0, RowSgemm, 0, 0}} {
			y := make([]float32, T*rows)
			if err := ctx.MatMulGGML(x, T, flags, Out{w, y}); err != nil {
				t.Fatal(err)
			}
			for tk := 0; tk < T; tk++ {
				x16 := make([]uint16, cols)
				for i, v := range x[tk*cols : (tk+1)*cols] {
					x16[i] = F32ToF16(v)
				}
				for i := 0; i < rows; i++ {
					row := bytesAsU16(w.Row(i))
					want := DotF16GGML(row, x16)
					if flags != nil && flags[tk]&RowSgemm != 0 && cols%GGMLLanes() == 0 && rows%4 == 0 {
						want = DotF16Sgemm(row, x16)
					}
					if got := y[tk*rows+i]; got != want {
						t.Fatalf("%dx%d flags %v: token %d row %d = %v, want %v", rows, cols, flags != nil, tk, i, got, want)
					}
				}
			}
		}
	}
}
