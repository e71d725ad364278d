package tensor

import "unsafe"

//go:noescape
func dotF16x3AVX2(w unsafe.Pointer, x *float32, xstride, n int, out *[3]float32)

// dotF16x3 computes one f16 row against three consecutive activation rows
// of len(w)/2 values; each result equals dotF16 of that pair.
func dotF16x3(w []byte, x []float32, out *[3]float32) {
	n := len(w) / 2
	if hasAVX2 && n%8 == 0 && n > 0 {
		_ = x[3*n-1]
		dotF16x3AVX2(unsafe.Pointer(&w[0]), &x[0], 4*n, n, out)
		return
	}
	for t := range out {
		out[t] = dotF16(w, x[t*n:(t+1)*n])
	}
}
