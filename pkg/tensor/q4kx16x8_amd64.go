package tensor

//go:noescape
func q4Kx16x8GemvVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[128]float32)

//go:noescape
func q4Kx16x8GemmVNNI(w *byte, gstride int, nb int, xq *int8, xd *float32, bs *int16, out *[128]float32)

// q4Kx16x8 is q4Kx16x4 against eight consecutive tokens (each weight byte
// split once for all eight): out[16t+r] is token t, row r of the pair,
// the bits q4Kx16x4 gives tokens 0-3 and 4-7. ok is false where the CPU
// lacks AVX-512 VNNI (then nothing is done).
func q4Kx16x8(w []byte, nb int, xq []int8, xd []float32, bs []int16, gemm bool, out *[128]float32) (ok bool) {
	if !hasVNNI || nb == 0 {
		return false
	}
	gb := nb * q4Kx8GroupBytes
	_ = w[2*gb-1]
	_ = xq[8*nb*QKK-1]
	_ = xd[8*nb-1]
	_ = bs[8*16*nb-1]
	if gemm {
		q4Kx16x8GemmVNNI(&w[0], gb, nb, &xq[0], &xd[0], &bs[0], out)
	} else {
		q4Kx16x8GemvVNNI(&w[0], gb, nb, &xq[0], &xd[0], &bs[0], out)
	}
	return true
}
