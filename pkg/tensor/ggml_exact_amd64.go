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
func ggmlDotF16Rows4AVX2(r0, r1, r2, r3, q unsafe.Pointer, n int, out *[4]float32)

//go:noescape
func ggmlFlashAccF16AVX2(acc, v unsafe.Pointer, offs *int, ms, vs *float32, n, hd int)

//go:noescape
func ggmlSgemmF16x16AVX2(a, b unsafe.Pointer, n int) float32

//go:noescape
func ggmlSgemmF16x8AVX2(a, b unsafe.Pointer, n int) float32

//go:noescape
func ggmlF16ToF32AVX2(dst *float32, src unsafe.Pointer, n int)

//go:noescape
func ggmlF32ToF16AVX2(dst *uint16, src *float32, n int)

//go:noescape
func ggmlVExpAVX2(y, x *float32, n, mode int)

//go:noescape
func ggmlSwigluAVX2(y, x, gate *float32, n, mode int)

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

//go:noescape
func ggmlDotF16RowsX16AVX2(base unsafe.Pointer, offs *int, rows int, q unsafe.Pointer, n int, out *float32)

//go:noescape
func ggmlDotF16RowsX8AVX2(base unsafe.Pointer, offs *int, rows int, q unsafe.Pointer, n int, out *float32)

func dotF16GGMLRows(out []float32, base []uint16, offs []int, q []uint16) {
	n := len(q)
	if hasAVX2 && n > 0 && n%(4*ggmlLanes) == 0 && len(offs) > 0 {
		// No leftovers: every row is the vector part alone, computed in
		// one call for all rows (the per-row call was a third of a
		// decode step's attention at long context).
		for _, o := range offs {
			_ = base[o+n-1]
		}
		if ggmlLanes == 16 {
			ggmlDotF16RowsX16AVX2(unsafe.Pointer(&base[0]), &offs[0], len(offs), unsafe.Pointer(&q[0]), n, &out[0])
		} else {
			ggmlDotF16RowsX8AVX2(unsafe.Pointer(&base[0]), &offs[0], len(offs), unsafe.Pointer(&q[0]), n, &out[0])
		}
		return
	}
	j := 0
	if hasAVX2 && n > 0 && n < 4*ggmlLanes {
		var res [4]float32
		for ; j+4 <= len(offs); j += 4 {
			o := offs[j : j+4 : j+4]
			_, _, _, _ = base[o[0]+n-1], base[o[1]+n-1], base[o[2]+n-1], base[o[3]+n-1]
			ggmlDotF16Rows4AVX2(unsafe.Pointer(&base[o[0]]), unsafe.Pointer(&base[o[1]]), unsafe.Pointer(&base[o[2]]),
				unsafe.Pointer(&base[o[3]]), unsafe.Pointer(&q[0]), n, &res)
			copy(out[j:j+4], res[:])
		}
	}
	for ; j < len(offs); j++ {
		out[j] = dotF16GGML(base[offs[j]:offs[j]+n], q)
	}
}

//go:noescape
func ggmlFlashAcc64AVX2(acc, v unsafe.Pointer, offs *int, ms, vs *float32, n int)

func flashAccF16(acc, v []uint16, offs []int, ms, vs []float32) {
	hd := len(acc)
	if !hasAVX2 || hd%8 != 0 || len(offs) == 0 || hd == 0 {
		flashAccF16Generic(acc, v, offs, ms, vs)
		return
	}
	for _, o := range offs {
		_ = v[o+hd-1]
	}
	_, _ = ms[len(offs)-1], vs[len(offs)-1]
	if hd%64 == 0 {
		// 64 columns per pass: eight independent chains per key.
		for c := 0; c < hd; c += 64 {
			ggmlFlashAcc64AVX2(unsafe.Pointer(&acc[c]), unsafe.Pointer(&v[c]), &offs[0], &ms[0], &vs[0], len(offs))
		}
		return
	}
	ggmlFlashAccF16AVX2(unsafe.Pointer(&acc[0]), unsafe.Pointer(&v[0]), &offs[0], &ms[0], &vs[0], len(offs), hd)
}

func sgemmF16(a, b []uint16) float32 {
	if !hasAVX2 || len(a) == 0 {
		return sgemmF16Generic(a, b)
	}
	if ggmlLanes == 16 {
		return ggmlSgemmF16x16AVX2(unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), len(a))
	}
	return ggmlSgemmF16x8AVX2(unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), len(a))
}

func f16ToF32Row(dst []float32, src []uint16) {
	if !hasAVX2 || len(src) == 0 {
		for i, h := range src {
			dst[i] = F16ToF32(h)
		}
		return
	}
	_ = dst[len(src)-1]
	ggmlF16ToF32AVX2(&dst[0], unsafe.Pointer(&src[0]), len(src))
}

func f32ToF16Row(dst []uint16, src []float32) {
	if !hasAVX2 || len(src) == 0 {
		for i, v := range src {
			dst[i] = F32ToF16(v)
		}
		return
	}
	_ = dst[len(src)-1]
	ggmlF32ToF16AVX2(&dst[0], &src[0], len(src))
}

//go:noescape
func ggmlVExpAVX512(y, x *float32, n int)

func vexpGGML(y, x []float32) {
	if n := len(x) &^ 15; hasFA512 && ggmlLanes == 16 && n > 0 {
		// ggml's own AVX-512 instructions, 16 lanes at a time (the AVX2
		// emulation of _mm512_scalef_ps took 8 and twice the steps).
		_ = y[n-1]
		ggmlVExpAVX512(&y[0], &x[0], n)
		y, x = y[n:], x[n:]
	}
	n := len(x) &^ 7
	if hasAVX2 && n > 0 {
		_ = y[n-1]
		ggmlVExpAVX2(&y[0], &x[0], n, ggmlLanes)
	}
	for i := n; i < len(x); i++ {
		y[i] = vexpLane(x[i])
	}
}

func swigluGGML(y, x, g []float32) {
	n := len(x) &^ 7
	if hasAVX2 && n > 0 {
		_, _ = y[n-1], g[n-1]
		ggmlSwigluAVX2(&y[0], &x[0], &g[0], n, ggmlLanes)
	}
	for i := n; i < len(x); i++ {
		v := x[i]
		y[i] = v / (1 + vexpLane(0-v)) * g[i]
	}
}
