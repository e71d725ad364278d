package tensor

import "unsafe"

//go:noescape
func dotQ4Rows8AVX2(w unsafe.Pointer, rowBytes int, xq *int8, ds *float32, nb int, out *[8]float32)

//go:noescape
func dotQ4Tok4AVX2(w unsafe.Pointer, xq *int8, dsT *float32, nb, xstride int, out *[4]float32)

//go:noescape
func dotQ4ChainAVX2(w unsafe.Pointer, xq *int8, ds *float32, nb int) float32

// dotQ4Chain is a q4_0 row · q8_0 activation with llama.cpp's repacked-q4_0
// rounding (see q4chain_amd64.s).
func dotQ4Chain(w []byte, xq []int8, ds []float32) float32 {
	if len(ds) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = w[len(ds)*q4BlockBytes-1]
		_ = xq[len(ds)*QK-1]
		return dotQ4ChainAVX2(unsafe.Pointer(&w[0]), &xq[0], &ds[0], len(ds))
	}
	return dotQ4ChainGeneric(w, xq, ds)
}

// dotQ4Rows8 computes eight consecutive rows of w (rows of rowBytes
// starting at w[0]) against one activation row.
func dotQ4Rows8(w []byte, rowBytes int, xq []int8, ds []float32, out *[8]float32) {
	nb := len(ds)
	if hasAVX2 && nb > 0 {
		_ = w[7*rowBytes+nb*q4BlockBytes-1]
		_ = xq[nb*QK-1]
		dotQ4Rows8AVX2(unsafe.Pointer(&w[0]), rowBytes, &xq[0], &ds[0], nb, out)
		return
	}
	for k := range out {
		out[k] = dotQ4ChainGeneric(w[k*rowBytes:], xq, ds)
	}
}

// dotQ4Tok4 computes one row against four consecutive activation rows; dsT
// holds their scales interleaved per block (dsT[4*b+t]).
func dotQ4Tok4(w []byte, xq []int8, dsT []float32, out *[4]float32) {
	nb := len(dsT) / 4
	if hasAVX2 && nb > 0 {
		_ = w[nb*q4BlockBytes-1]
		_ = xq[4*nb*QK-1]
		dotQ4Tok4AVX2(unsafe.Pointer(&w[0]), &xq[0], &dsT[0], nb, nb*QK, out)
		return
	}
	dotQ4Tok4Generic(w, xq, dsT, out)
}
