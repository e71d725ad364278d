//go:build !amd64

package tensor

const hasSgemmF16 = false

func sgemmF16x16(w []byte, rowBytes int, x []float32, n, ntok int, out *[4 * sgemmTok]float32) {
	panic("sgemmF16x16 needs AVX-512")
}

func ggmlF16x16(w []byte, x []float32, stride, n, ntok int, acc *[ggmlTok * 64]float32, out *[ggmlTok]float32, first, last bool, pf int) {
	panic("ggmlF16x16 needs AVX-512")
}
