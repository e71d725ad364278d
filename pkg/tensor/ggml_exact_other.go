//go:build !amd64

// exactness: portable versions of the llama.cpp-exact kernels (see
// ggml_exact.go).

package tensor

func dotF32GGML16(a, b []float32) float32  { return dotF32GGMLGeneric(a, b, 16) }
func dotF32GGML8(a, b []float32) float32   { return dotF32GGMLGeneric(a, b, 8) }
func dotF32Sgemm16(a, b []float32) float32 { return dotF32SgemmGeneric(a, b, 16) }
func dotF32Sgemm8(a, b []float32) float32  { return dotF32SgemmGeneric(a, b, 8) }

func dotF16GGML(x, y []uint16) float32 { return dotF16GGMLGeneric(x, y) }

func dotF16GGMLRows(out []float32, base []uint16, offs []int, q []uint16) {
	for j, o := range offs {
		out[j] = dotF16GGMLGeneric(base[o:o+len(q)], q)
	}
}

func flashAccF16(acc, v []uint16, offs []int, ms, vs []float32) {
	flashAccF16Generic(acc, v, offs, ms, vs)
}

func sgemmF16(a, b []uint16) float32 { return sgemmF16Generic(a, b) }

func f16ToF32Row(dst []float32, src []uint16) {
	for i, h := range src {
		dst[i] = F16ToF32(h)
	}
}

func f32ToF16Row(dst []uint16, src []float32) {
	for i, v := range src {
		dst[i] = F32ToF16(v)
	}
}

func vexpGGML(y, x []float32) {
	for i, v := range x {
		y[i] = vexpLane(v)
	}
}

func swigluGGML(y, x, g []float32) {
	for i, v := range x {
		y[i] = v / (1 + vexpLane(0-v)) * g[i]
	}
}
