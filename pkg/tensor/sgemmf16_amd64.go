package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// hasSgemmF16 selects sgemmF16Block (AVX-512 with 32 ZMM registers).
var hasSgemmF16 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func sgemmF16x16AVX512(w unsafe.Pointer, rowBytes int, x *float32, xstride, n, ntok int, out *[4 * sgemmTok]float32)

// sgemmF16x16 runs four f16 rows (rowBytes apart from w[0]; 0 repeats
// one row) against ntok (1..sgemmTok) f32 activation rows of n values
// (n a multiple of 16), out[c*4+r].
func sgemmF16x16(w []byte, rowBytes int, x []float32, n, ntok int, out *[4 * sgemmTok]float32) {
	_ = w[3*rowBytes+2*n-1]
	_ = x[(ntok-1)*n+n-1]
	sgemmF16x16AVX512(unsafe.Pointer(&w[0]), rowBytes, &x[0], 4*n, n, ntok, out)
}

//go:noescape
func ggmlF16x16AVX512(w, x unsafe.Pointer, xstride, n, ntok int, out *[ggmlTok]float32)

// ggmlF16x16 runs one f16 row of n values (a multiple of 64) against ntok
// (1..ggmlTok) consecutive f16 activation rows of n values: DotF16GGML's
// bits for each.
func ggmlF16x16(w []byte, x []uint16, n, ntok int, out *[ggmlTok]float32) {
	_ = w[2*n-1]
	_ = x[(ntok-1)*n+n-1]
	ggmlF16x16AVX512(unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0]), 2*n, n, ntok, out)
}
