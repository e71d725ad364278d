//go:build !amd64

package tensor

func q4Kx8(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out *[8]float32) {
	q4Kx8Generic(w, nb, xq, xd, xs, gemm, out)
}
