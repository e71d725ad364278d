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
