package tensor

//go:noescape
func quantizeActQ8AVX2(x *float32, qs *int8, ds *float32, nb int)

// quantizeActQ8 is QuantizeActQ8 in assembly where the CPU has AVX2.
func quantizeActQ8(x []float32, qs []int8, ds []float32) bool {
	nb := len(x) / QK
	if !hasAVX2 || nb == 0 {
		return false
	}
	_ = qs[nb*QK-1]
	_ = ds[nb-1]
	quantizeActQ8AVX2(&x[0], &qs[0], &ds[0], nb)
	return true
}
