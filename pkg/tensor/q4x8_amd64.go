package tensor

import "unsafe"

//go:noescape
func q4x8AVX2(w unsafe.Pointer, nb int, xq *int8, xstride int, xds *float32, ntok int, out *[8 * q4x8MaxTok]float32)

//go:noescape
func q4x8VNNI(w unsafe.Pointer, nb int, xq *int8, xstride int, xds *float32, ntok int, out *[8 * q4x8MaxTok]float32)

// q4x8Tokens is how many tokens one q4x8 call takes on this CPU.
func q4x8Tokens() int {
	if hasVNNI {
		return 8
	}
	return 4
}

// q4x8 computes a packed group of eight rows (nb blocks at w) against ntok
// (1..q4x8Tokens()) quantized activation rows: xq rows of nb*32 values and
// xds rows of nb (scale, 8*sum) pairs (fillQ4Sums). out[c*8+r].
func q4x8(w []byte, nb int, xq []int8, xds []float32, ntok int, out *[8 * q4x8MaxTok]float32) {
	if hasAVX2 && nb > 0 {
		_ = w[nb*q4x8GroupBytes-1]
		_ = xq[ntok*nb*QK-1]
		_ = xds[2*ntok*nb-1]
		if hasVNNI {
			q4x8VNNI(unsafe.Pointer(&w[0]), nb, &xq[0], nb*QK, &xds[0], ntok, out)
		} else {
			q4x8AVX2(unsafe.Pointer(&w[0]), nb, &xq[0], nb*QK, &xds[0], ntok, out)
		}
		return
	}
	q4x8Generic(w, nb, xq, xds, ntok, out)
}
