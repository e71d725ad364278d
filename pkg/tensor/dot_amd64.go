package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func dotF16AVX2(w unsafe.Pointer, x *float32, n int) float32

//go:noescape
func dotBF16AVX2(w unsafe.Pointer, x *float32, n int) float32

//go:noescape
func dotQ8AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb int) float32

//go:noescape
func dotQ8x2AVX2(w unsafe.Pointer, rowBytes int, xq *int8, ds *float32, nb int, out *[2]float32)

//go:noescape
func dotQ4AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb int) float32

//go:noescape
func axpyF32AVX2(dst, x *float32, a float32, n int)

//go:noescape
func dotQ8x4AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb, xstride int, out *[4]float32)

//go:noescape
func dotQ4x4AVX2(w unsafe.Pointer, xq *int8, ds *float32, nb, xstride int, out *[4]float32)

// hasAVX2 is fixed at start-up from the CPU's features; the kernels below
// pick the assembly or the portable version from it.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// DotF32 returns sum a[i]*b[i] over len(a) (b must be at least as long).
func DotF32(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = b[len(a)-1]
		return dotF32AVX2(&a[0], &b[0], len(a))
	}
	return dotF32Generic(a, b)
}

func dotF16(w []byte, x []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = w[2*len(x)-1]
		return dotF16AVX2(unsafe.Pointer(&w[0]), &x[0], len(x))
	}
	return dotF16Generic(w, x)
}

func dotBF16(w []byte, x []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = w[2*len(x)-1]
		return dotBF16AVX2(unsafe.Pointer(&w[0]), &x[0], len(x))
	}
	return dotBF16Generic(w, x)
}

func dotQ8(w []byte, xq []int8, ds []float32) float32 {
	if len(ds) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = w[len(ds)*q8BlockBytes-1]
		_ = xq[len(ds)*QK-1]
		return dotQ8AVX2(unsafe.Pointer(&w[0]), &xq[0], &ds[0], len(ds))
	}
	return dotQ8Generic(w, xq, ds)
}

// dotQ8x2 is dotQ8 for the two rows w[:rowBytes] and w[rowBytes:], bit for
// bit, as two FMA chains side by side.
func dotQ8x2(w []byte, rowBytes int, xq []int8, ds []float32, out *[2]float32) {
	if len(ds) == 0 {
		*out = [2]float32{}
		return
	}
	if hasAVX2 {
		_ = w[rowBytes+len(ds)*q8BlockBytes-1]
		_ = xq[len(ds)*QK-1]
		dotQ8x2AVX2(unsafe.Pointer(&w[0]), rowBytes, &xq[0], &ds[0], len(ds), out)
		return
	}
	out[0] = dotQ8Generic(w, xq, ds)
	out[1] = dotQ8Generic(w[rowBytes:], xq, ds)
}

func dotQ4(w []byte, xq []int8, ds []float32) float32 {
	if len(ds) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = w[len(ds)*q4BlockBytes-1]
		_ = xq[len(ds)*QK-1]
		return dotQ4AVX2(unsafe.Pointer(&w[0]), &xq[0], &ds[0], len(ds))
	}
	return dotQ4Generic(w, xq, ds)
}

// AxpyF32 adds a*x to dst (len(dst) values).
func AxpyF32(dst []float32, a float32, x []float32) {
	if len(dst) == 0 {
		return
	}
	if hasAVX2 {
		_ = x[len(dst)-1]
		axpyF32AVX2(&dst[0], &x[0], a, len(dst))
		return
	}
	axpyF32Generic(dst, a, x)
}

// dotQ8x4 computes one q8_0 weight row against four consecutive quantized
// activation rows (xq rows of nb*32 values, ds rows of nb scales); each
// result equals dotQ8 of that row.
func dotQ8x4(w []byte, xq []int8, ds []float32, out *[4]float32) {
	nb := len(ds) / 4
	if hasAVX2 && nb > 0 {
		_ = w[nb*q8BlockBytes-1]
		_ = xq[4*nb*QK-1]
		dotQ8x4AVX2(unsafe.Pointer(&w[0]), &xq[0], &ds[0], nb, nb*QK, out)
		return
	}
	for t := range out {
		out[t] = dotQ8(w, xq[t*nb*QK:(t+1)*nb*QK], ds[t*nb:(t+1)*nb])
	}
}

// dotQ4x4 is dotQ8x4 for q4_0 weights.
func dotQ4x4(w []byte, xq []int8, ds []float32, out *[4]float32) {
	nb := len(ds) / 4
	if hasAVX2 && nb > 0 {
		_ = w[nb*q4BlockBytes-1]
		_ = xq[4*nb*QK-1]
		dotQ4x4AVX2(unsafe.Pointer(&w[0]), &xq[0], &ds[0], nb, nb*QK, out)
		return
	}
	for t := range out {
		out[t] = dotQ4(w, xq[t*nb*QK:(t+1)*nb*QK], ds[t*nb:(t+1)*nb])
	}
}
