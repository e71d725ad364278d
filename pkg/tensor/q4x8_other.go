//go:build !amd64

package tensor

func q4x8Tokens() int { return 4 }

func q4x8(w []byte, nb int, xq []int8, xds []float32, ntok int, out *[8 * q4x8MaxTok]float32) {
	q4x8Generic(w, nb, xq, xds, ntok, out)
}
