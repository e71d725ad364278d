// The integer core of the lowbit.go kernels in assembly (lowbit_amd64.s)
// where the CPU has AVX2.

package tensor

//go:noescape
func i8LanesAVX2(v, q *int8, sc *int16, nchunk, per int, out *int32)

// i8Lanes is i8LanesGeneric, in assembly when the CPU has AVX2.
func i8Lanes(v, q []int8, sc []int16, per int, out []int32) {
	nchunk := len(v) / 32
	if !hasAVX2 || nchunk == 0 {
		i8LanesGeneric(v, q, sc, per, out)
		return
	}
	_, _, _ = q[32*nchunk-1], sc[2*nchunk-1], out[8*(nchunk/per)-1]
	i8LanesAVX2(&v[0], &q[0], &sc[0], nchunk, per, &out[0])
}

//go:noescape
func fmaLanesAVX2(acc *[8]float32, d *float32, lanes *int32, n int)

// fmaBlocks is fmaBlocksGeneric, in assembly when the CPU has AVX2/FMA.
func fmaBlocks(acc *[8]float32, d []float32, lanes []int32) {
	if !hasAVX2 || len(d) == 0 {
		fmaBlocksGeneric(acc, d, lanes)
		return
	}
	_ = lanes[8*len(d)-1]
	fmaLanesAVX2(acc, &d[0], &lanes[0], len(d))
}
