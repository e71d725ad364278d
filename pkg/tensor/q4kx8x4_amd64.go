package tensor

//go:noescape
func q4Kx8x4GemvAVX2(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)

//go:noescape
func q4Kx8x4GemmAVX2(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)

//go:noescape
func q4Kx8x4GemvVNNI(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)

//go:noescape
func q4Kx8x4GemmVNNI(w *byte, nb int, xq *int8, xd *float32, bs *int16, out *[32]float32)

// q4Kx8x4 computes a packed group of eight q4_K rows (nb super-blocks at
// w) against four consecutive q8_K activation rows (xq, xd and bs hold
// the four tokens' quants, scales and 16-value sums back to back); out[8t+r]
// is token t, row r, bit-identical to q4Kx8Rows on token t alone.
func q4Kx8x4(w []byte, nb int, xq []int8, xd []float32, bs []int16, gemm bool, out *[32]float32) {
	if !hasAVX2 || nb == 0 {
		q4Kx8x4Generic(w, nb, xq, xd, bs, gemm, out)
		return
	}
	_ = w[nb*q4Kx8GroupBytes-1]
	_ = xq[4*nb*QKK-1]
	_ = xd[4*nb-1]
	_ = bs[4*16*nb-1]
	switch {
	case hasVNNI && gemm:
		q4Kx8x4GemmVNNI(&w[0], nb, &xq[0], &xd[0], &bs[0], out)
	case hasVNNI:
		q4Kx8x4GemvVNNI(&w[0], nb, &xq[0], &xd[0], &bs[0], out)
	case gemm:
		q4Kx8x4GemmAVX2(&w[0], nb, &xq[0], &xd[0], &bs[0], out)
	default:
		q4Kx8x4GemvAVX2(&w[0], nb, &xq[0], &xd[0], &bs[0], out)
	}
}
