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
	for _, shape := range [][2]int{{4, 16}, {13, 64}, {70, 2048}} {
		rows, cols := shape[0], shape[1]
		w, _ := randMatrix(t, r, F16, rows, cols)
		for _, T := range []int{1, 3, 5, 7, 12} {
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
