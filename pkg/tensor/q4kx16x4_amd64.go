package tensor

//go:noescape
func q4Kx16x4GemvVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[64]float32)

//go:noescape
func q4Kx16x4GemmVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[64]float32)

// q4Kx16x4 is q4Kx8x4 of two consecutive packed groups (w holds both,
// nb super-blocks each) with AVX-512 VNNI: out[16t+r] is token t, row r
// of the pair. ok is false where the CPU lacks it (then nothing is done).
func q4Kx16x4(w []byte, nb int, xq []int8, xd []float32, bs []int16, gemm bool, out *[64]float32) (ok bool) {
	if !hasVNNI || nb == 0 {
		return false
	}
	gb := nb * q4Kx8GroupBytes
	_ = w[2*gb-1]
	_ = xq[4*nb*QKK-1]
	_ = xd[4*nb-1]
	_ = bs[4*16*nb-1]
	if gemm {
		q4Kx16x4GemmVNNI(&w[0], gb, nb, &xq[0], &xd[0], &bs[0], out)
	} else {
		q4Kx16x4GemvVNNI(&w[0], gb, nb, &xq[0], &xd[0], &bs[0], out)
	}
	return true
}
