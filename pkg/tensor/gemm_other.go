//go:build !amd64

package tensor

func dotF16x3(w []byte, x []float32, out *[3]float32) {
	n := len(w) / 2
	for t := range out {
		out[t] = dotF16(w, x[t*n:(t+1)*n])
	}
}

func dotF16x3Part(w []byte, x []float32, xstride int, acc *[96]float32, out *[3]float32) {
	panic("dotF16x3Part needs AVX2")
}
