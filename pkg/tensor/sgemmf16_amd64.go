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
func ggmlF16x16AVX512(w, x unsafe.Pointer, xstride, n, ntok int, acc *[ggmlTok * 64]float32, out *[ggmlTok]float32, flags, pf int)

// ggmlF16x16 runs columns [k0, k0+n) of one f16 row (w starts at column
// k0; n a multiple of 64) against ntok (1..ggmlTok) activation rows of
// stride values (x starts at column k0 of the first), f16 values widened
// to f32, continuing the running sums in acc. With first the sums start
// from zero; with last, out gets DotF16GGML's bits for each token. The
// kernel prefetches the weights pf bytes ahead of those it reads (prefetch
// never faults, so pf may point past the matrix).
func ggmlF16x16(w []byte, x []float32, stride, n, ntok int, acc *[ggmlTok * 64]float32, out *[ggmlTok]float32, first, last bool, pf int) {
	_ = w[2*n-1]
	_ = x[(ntok-1)*stride+n-1]
	flags := 0
	if first {
		flags |= 1
	}
	if last {
		flags |= 2
	}
	ggmlF16x16AVX512(unsafe.Pointer(&w[0]), unsafe.Pointer(&x[0]), 4*stride, n, ntok, acc, out, flags, pf)
}
