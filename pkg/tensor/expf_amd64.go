package tensor

//go:noescape
func expfRowAVX2(dst, src *float32, n int, tab *uint64) int

// ExpfRow sets dst[i] = Expf(src[i]) bit for bit (len(dst) >= len(src)).
func ExpfRow(dst, src []float32) {
	dst = dst[:len(src)]
	for i := 0; i < len(src); {
		if hasAVX2 && len(src)-i >= 4 {
			i += expfRowAVX2(&dst[i], &src[i], len(src)-i, &expf2Tab[0])
		}
		// A group the kernel left (a special value) or the last few.
		for end := min(i+4, len(src)); i < end; i++ {
			dst[i] = Expf(src[i])
		}
	}
}
