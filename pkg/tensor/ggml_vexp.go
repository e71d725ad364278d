// exactness: ggml_v_expf, llama.cpp's vectorised exp (see ggml_exact.go and
// ggml_vexp_amd64.s).

package tensor

import "math"

// VExpGGML sets y[i] = ggml_v_expf(x[i]) as the llama.cpp CPU build of this
// machine computes it (its AVX-512 or AVX2 form, per GGMLLanes()).
func VExpGGML(y, x []float32) { vexpGGML(y[:len(x)], x) }

// SwiGLUGGML sets y[i] = x[i] / (1 + ggml_v_expf(-x[i])) * g[i]: the vector
// loop of ggml_vec_swiglu_f32. Callers handle the last len%GGMLLanes()
// elements, which ggml computes with the C library's expf.
func SwiGLUGGML(y, x, g []float32) { swigluGGML(y[:len(x)], x, g[:len(x)]) }

func vexpLane(x float32) float32 {
	if ggmlLanes == 16 {
		return vexpf16(x)
	}
	return vexpf8(x)
}

// vexpf16 is one lane of ggml_v_expf's AVX-512 form: a degree-5
// polynomial and _mm512_scalef_ps.
func vexpf16(x float32) float32 {
	z := FMA32(x, 0x1.715476p+0, 0x1.8p23)
	n := z - 0x1.8p23
	b := FMA32(-n, 0x1.7f7d1cp-20, FMA32(-n, 0x1.62e4p-1, x))
	u := b * b
	j := FMA32(FMA32(FMA32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, FMA32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u, FMA32(0x1.ffffecp-1, b, 1))
	if abs32(n) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	return float32(math.Ldexp(float64(j), int(n))) // scalef: one rounding
}

// vexpf8 is one lane of ggml_v_expf's AVX2 form.
func vexpf8(x float32) float32 {
	z := FMA32(x, 0x1.715476p+0, 0x1.8p23)
	n := z - 0x1.8p23
	b := FMA32(-n, 0x1.7f7d1cp-20, FMA32(-n, 0x1.62e4p-1, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + math.Float32bits(1))
	u := b * b
	j := FMA32(FMA32(FMA32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, FMA32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u, float32(0x1.ffffecp-1*b))
	an := abs32(n)
	if an <= 126 {
		return FMA32(k, j, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	if an > 192 {
		return s1 * s1
	}
	s2 := math.Float32frombits(e - g)
	return FMA32(s2, j, s2) * s1
}
