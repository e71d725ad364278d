package tensor

//go:noescape
func f32ToF16F16C(dst *uint16, src *float32, n int)

// f32ToF16Vec converts the longest prefix of src that is a multiple of 16
// with F16C and returns its length (0 without AVX2/F16C).
func f32ToF16Vec(dst []uint16, src []float32) int {
	n := len(src) &^ 15
	if !hasAVX2 || n == 0 {
		return 0
	}
	_ = dst[n-1]
	f32ToF16F16C(&dst[0], &src[0], n)
	return n
}
