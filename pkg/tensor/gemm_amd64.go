package tensor

import "unsafe"

//go:noescape
func dotF16x3AVX2(w unsafe.Pointer, x *float32, xstride, n int, acc *[96]float32, out *[3]float32)

// dotF16x3Part runs one f16 row piece (len(w)/2 values: a multiple of 32,
// or of 8 for the last piece) against three activation row pieces
// xstride values apart, continuing the accumulators in acc. With out nil
// it stores them back; otherwise it finishes the three dot products into
// out, each equal to dotF16 of the whole rows. Needs AVX2.
func dotF16x3Part(w []byte, x []float32, xstride int, acc *[96]float32, out *[3]float32) {
	n := len(w) / 2
	if n == 0 {
		return
	}
	_ = x[2*xstride+n-1]
	dotF16x3AVX2(unsafe.Pointer(&w[0]), &x[0], 4*xstride, n, acc, out)
}

// dotF16x3 computes one f16 row against three consecutive activation rows
// of len(w)/2 values; each result equals dotF16 of that pair.
func dotF16x3(w []byte, x []float32, out *[3]float32) {
	n := len(w) / 2
	if hasAVX2 && n%8 == 0 && n > 0 {
		var acc [96]float32
		dotF16x3Part(w, x, n, &acc, out)
		return
	}
	for t := range out {
		out[t] = dotF16(w, x[t*n:(t+1)*n])
	}
}
