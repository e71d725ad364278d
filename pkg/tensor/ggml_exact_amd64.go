// exactness: amd64 dispatch of the llama.cpp-exact kernels (see
// ggml_exact.go); the assembly needs AVX2, FMA and F16C.

package tensor

import "unsafe"

//go:noescape
func ggmlDotF32x16AVX2(a, b *float32, n int) float32

//go:noescape
func ggmlDotF32x8AVX2(a, b *float32, n int) float32

//go:noescape
func ggmlSgemmF32x16AVX2(a, b *float32, n int) float32

//go:noescape
func ggmlSgemmF32x8AVX2(a, b *float32, n int) float32

//go:noescape
func ggmlDotF16x16AVX2(x, y unsafe.Pointer, n int) float32

//go:noescape
func ggmlDotF16x8AVX2(x, y unsafe.Pointer, n int) float32

//go:noescape
func ggmlDotF16TailAVX2(x, y unsafe.Pointer, n int, sum float64) float64

//go:noescape
func ggmlMadF16AVX2(acc, v unsafe.Pointer, s float32, n int)

func dotF32GGML16(a, b []float32) float32 {
	if !hasAVX2 || len(a) == 0 {
		return dotF32GGMLGeneric(a, b, 16)
	}
	return ggmlDotF32x16AVX2(&a[0], &b[0], len(a))
}

func dotF32GGML8(a, b []float32) float32 {
	if !hasAVX2 || len(a) == 0 {
		return dotF32GGMLGeneric(a, b, 8)
	}
	return ggmlDotF32x8AVX2(&a[0], &b[0], len(a))
}

func dotF32Sgemm16(a, b []float32) float32 {
	if !hasAVX2 || len(a) == 0 {
		return dotF32SgemmGeneric(a, b, 16)
	}
	return ggmlSgemmF32x16AVX2(&a[0], &b[0], len(a))
}

func dotF32Sgemm8(a, b []float32) float32 {
	if !hasAVX2 || len(a) == 0 {
		return dotF32SgemmGeneric(a, b, 8)
	}
	return ggmlSgemmF32x8AVX2(&a[0], &b[0], len(a))
}

func dotF16GGML(x, y []uint16) float32 {
	if !hasAVX2 || len(x) == 0 {
		return dotF16GGMLGeneric(x, y)
	}
	np := len(x) &^ (4*ggmlLanes - 1)
	var sum float64
	if np > 0 {
		if ggmlLanes == 16 {
			sum = float64(ggmlDotF16x16AVX2(unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0]), np))
		} else {
			sum = float64(ggmlDotF16x8AVX2(unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0]), np))
		}
	}
	if np < len(x) {
		sum = ggmlDotF16TailAVX2(unsafe.Pointer(&x[np]), unsafe.Pointer(&y[np]), len(x)-np, sum)
	}
	return float32(sum)
}

func madF16GGML(acc, v []uint16, s float32) {
	if !hasAVX2 || len(acc) == 0 {
		madF16GGMLGeneric(acc, v, s)
		return
	}
	ggmlMadF16AVX2(unsafe.Pointer(&acc[0]), unsafe.Pointer(&v[0]), s, len(acc))
}
