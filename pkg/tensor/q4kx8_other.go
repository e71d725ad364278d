//go:build !amd64

package tensor

func q4Kx8Rows(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out []float32) {
	q4Kx8RowsGeneric(w, nb, xq, xd, xs, gemm, out)
}

func q4Kx8x4(w []byte, nb int, xq []int8, xd []float32, bs []int16, gemm bool, out *[32]float32) {
	q4Kx8x4Generic(w, nb, xq, xd, bs, gemm, out)
}

// q4Kx16x4 needs AVX-512 VNNI: never done here.
func q4Kx16x4([]byte, int, []int8, []float32, []int16, bool, *[64]float32) bool { return false }

// q4Kx16x8 needs AVX-512 VNNI: never done here.
func q4Kx16x8([]byte, int, []int8, []float32, []int16, bool, *[128]float32) bool { return false }
