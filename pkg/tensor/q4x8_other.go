//go:build !amd64

package tensor

func q4x8(w []byte, nb int, xq []int8, xd []float32, xs []int32, ntok int, out *[32]float32) {
	q4x8Generic(w, nb, xq, xd, ntok, out)
}
