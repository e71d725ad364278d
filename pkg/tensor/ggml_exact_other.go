// exactness: portable versions of the llama.cpp-exact f32 kernels (see
// ggml_exact.go).

package tensor

func dotF32GGML16(a, b []float32) float32  { return dotF32GGMLGeneric(a, b, 16) }
func dotF32GGML8(a, b []float32) float32   { return dotF32GGMLGeneric(a, b, 8) }
func dotF32Sgemm16(a, b []float32) float32 { return dotF32SgemmGeneric(a, b, 16) }
func dotF32Sgemm8(a, b []float32) float32  { return dotF32SgemmGeneric(a, b, 8) }
