package tensor

//go:noescape
func q4Kx8GemvAVX2(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)

//go:noescape
func q4Kx8GemmAVX2(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)

//go:noescape
func q4Kx8GemvVNNI(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)

//go:noescape
func q4Kx8GemmVNNI(w *byte, nb int, xq *int8, xd *float32, xs *int32, out *float32, groups int)

// q4Kx8Rows computes len(out)/8 consecutive packed groups of eight q4_K
// rows (nb super-blocks each, at w) against one q8_K activation row (xs:
// its 32-value sums) in one call: out[8g+r] is row r of group g.
func q4Kx8Rows(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out []float32) {
	groups := len(out) / 8
	if !hasAVX2 || nb == 0 || groups == 0 {
		q4Kx8RowsGeneric(w, nb, xq, xd, xs, gemm, out)
		return
	}
	_ = w[groups*nb*q4Kx8GroupBytes-1]
	_ = xq[nb*QKK-1]
	_ = xd[nb-1]
	_ = xs[8*nb-1]
	switch {
	case hasVNNI && gemm:
		q4Kx8GemmVNNI(&w[0], nb, &xq[0], &xd[0], &xs[0], &out[0], groups)
	case hasVNNI:
		q4Kx8GemvVNNI(&w[0], nb, &xq[0], &xd[0], &xs[0], &out[0], groups)
	case gemm:
		q4Kx8GemmAVX2(&w[0], nb, &xq[0], &xd[0], &xs[0], &out[0], groups)
	default:
		q4Kx8GemvAVX2(&w[0], nb, &xq[0], &xd[0], &xs[0], &out[0], groups)
	}
}
