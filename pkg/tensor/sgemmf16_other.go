//go:build !amd64

package tensor

const hasSgemmF16 = false

func sgemmF16x16(w []byte, rowBytes int, x []float32, n, ntok int, out *[4 * sgemmTok]float32) {
	panic("sgemmF16x16 needs AVX-512")
}

func ggmlF16x16(w []byte, x []uint16, n, ntok int, out *[ggmlTok]float32) {
	panic("ggmlF16x16 needs AVX-512")
}
