package tensor

import "unsafe"

//go:noescape
func q4x8AVX2(w unsafe.Pointer, nb int, xq *int8, xstride int, xd *float32, xs *int32, ntok int, out *[32]float32)

// q4x8 computes a packed group of eight rows (nb blocks at w) against ntok
// (1..4) quantized activation rows: xq rows of nb*32 values, xd rows of nb
// scales and xs rows of nb values 8*sum(block). out[c*8+r].
func q4x8(w []byte, nb int, xq []int8, xd []float32, xs []int32, ntok int, out *[32]float32) {
	if hasAVX2 && nb > 0 {
		_ = w[nb*q4x8GroupBytes-1]
		_ = xq[ntok*nb*QK-1]
		_ = xd[ntok*nb-1]
		_ = xs[ntok*nb-1]
		q4x8AVX2(unsafe.Pointer(&w[0]), nb, &xq[0], nb*QK, &xd[0], &xs[0], ntok, out)
		return
	}
	q4x8Generic(w, nb, xq, xd, ntok, out)
}
