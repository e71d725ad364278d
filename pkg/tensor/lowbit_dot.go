// exactness: see lowbit.go.

package tensor

// The dot products of the types in lowbit.go, portable Go. Each returns
// what llama.cpp's x86 kernel returns for one weight row against one
// activation row: integer sums are exact whatever their order, so only the
// float steps and which integers land in which of AVX2's eight lanes (lane
// l of a 32-value chunk holds values 4l..4l+3) are reproduced.

// lanes32 adds the products of one 32-value chunk (values given by val)
// with q8 into AVX2's eight int32 lanes, scaled by sc.
func lanes32(lanes *[8]int32, sc int32, q8 []int8, val func(j int) int32) {
	for j := 0; j < 32; j++ {
		lanes[j/4] += sc * val(j) * int32(q8[j])
	}
}

// fmaLanes is acc[l] = fma(d, lanes[l], acc[l]), the _mm256_fmadd_ps every
// AVX2 kernel ends a block with.
func fmaLanes(acc *[8]float32, d float32, lanes *[8]int32) {
	for l := range acc {
		acc[l] = FMA32(d, float32(lanes[l]), acc[l])
	}
}

// dotQ4_1 follows the AVX2 ggml_vec_dot_q4_1_q8_1: per block the lanes
// fused with d*dy, the mins m*s summed in one scalar chain (GCC fuses it),
// hsum_float_8 plus that sum.
func dotQ4_1(w []byte, xq []int8, xd, xs []float32) float32 {
	var acc [8]float32
	var summs float32
	for b := range xd {
		blk := w[b*q41BlockBytes : (b+1)*q41BlockBytes]
		summs = FMA32(f16At(blk[2:]), xs[b], summs)
		var lanes [8]int32
		qs := blk[4:20]
		lanes32(&lanes, 1, xq[32*b:], func(j int) int32 {
			if j < 16 {
				return int32(qs[j] & 0xF)
			}
			return int32(qs[j-16] >> 4)
		})
		fmaLanes(&acc, f16At(blk)*xd[b], &lanes)
	}
	return hsum8(&acc) + summs
}

// dotQ5 follows the AVX2 ggml_vec_dot_q5_0_q8_0 (quants minus 16) and
// ggml_vec_dot_q5_1_q8_1 (quants 0..31, plus the q4_1-style min sum).
// llamafile's tinyBLAS, which llama.cpp runs on q5_0 batches, rounds the
// same way.
func dotQ5(w []byte, xq []int8, xd, xs []float32, q51 bool) float32 {
	var acc [8]float32
	var summs float32
	bb, off, bias := q50BlockBytes, 2, int32(16)
	if q51 {
		bb, off, bias = q51BlockBytes, 4, 0
	}
	for b := range xd {
		blk := w[b*bb : (b+1)*bb]
		if q51 {
			summs = FMA32(f16At(blk[2:]), xs[b], summs)
		}
		qh := uint32(blk[off]) | uint32(blk[off+1])<<8 | uint32(blk[off+2])<<16 | uint32(blk[off+3])<<24
		qs := blk[off+4:]
		var lanes [8]int32
		lanes32(&lanes, 1, xq[32*b:], func(j int) int32 { return q5Value(qs, qh, j) - bias })
		fmaLanes(&acc, f16At(blk)*xd[b], &lanes)
	}
	return hsum8(&acc) + summs
}

// iq4nlBlock is the integer dot product of one iq4_nl block, in lanes.
func iq4nlBlock(blk []byte, q8 []int8) (lanes [8]int32) {
	lanes32(&lanes, 1, q8, func(j int) int32 { return iq4Value(blk[2:], j) })
	return
}

// dotIQ4NLVec follows the AVX2 ggml_vec_dot_iq4_nl_q8_0: blocks in pairs,
// even ones into one set of lanes and odd ones into another, the two added
// lane by lane and reduced as hsum_float_8; an odd last block is added as
// a scalar (sumf += d * sumi, fused).
func dotIQ4NLVec(w []byte, xq []int8, xd []float32) float32 {
	var acc1, acc2 [8]float32
	nb := len(xd)
	b := 0
	for ; b+1 < nb; b += 2 {
		for k, acc := range []*[8]float32{&acc1, &acc2} {
			blk := w[(b+k)*iq4nlBlockBytes:]
			lanes := iq4nlBlock(blk, xq[32*(b+k):])
			fmaLanes(acc, xd[b+k]*f16At(blk), &lanes)
		}
	}
	for l := range acc1 {
		acc1[l] += acc2[l]
	}
	sum := hsum8(&acc1)
	for ; b < nb; b++ {
		blk := w[b*iq4nlBlockBytes:]
		lanes := iq4nlBlock(blk, xq[32*b:])
		var isum int32
		for _, v := range lanes {
			isum += v
		}
		sum = FMA32(xd[b]*f16At(blk), float32(isum), sum)
	}
	return sum
}

// dotIQ4NLSgemm follows llamafile's tinyBLAS_Q0_AVX on iq4_nl, which
// llama.cpp runs on batches of two or more tokens when it does not repack
// the matrix: one set of lanes for all blocks, hsum_float_8.
func dotIQ4NLSgemm(w []byte, xq []int8, xd []float32) float32 {
	var acc [8]float32
	for b := range xd {
		blk := w[b*iq4nlBlockBytes:]
		lanes := iq4nlBlock(blk, xq[32*b:])
		fmaLanes(&acc, f16At(blk)*xd[b], &lanes)
	}
	return hsum8(&acc)
}

// dotIQ4NLChain follows the repacked ggml_gemv_iq4_nl_8x8_q8_0 /
// ggml_gemm_iq4_nl_8x8_q8_0 (q4_0's kernels with iq4_nl's grid), which
// llama.cpp uses for iq4_nl matrices of a multiple of 8 rows: one fused
// multiply-add per block, in order.
func dotIQ4NLChain(w []byte, xq []int8, xd []float32) float32 {
	var acc float32
	for b := range xd {
		blk := w[b*iq4nlBlockBytes:]
		lanes := iq4nlBlock(blk, xq[32*b:])
		var isum int32
		for _, v := range lanes {
			isum += v
		}
		acc = FMA32(float32(isum), f16At(blk)*xd[b], acc)
	}
	return acc
}

// q2KSums returns a q2_K block's integer sums against q8_K values q8 and
// bsums bs, over values [lo, hi) (whole 16-value sub-blocks): the scaled
// products and the mins times the activation sums.
func q2KSums(blk []byte, q8 []int8, bs []int16, lo, hi int) (isum, imin int32) {
	for i := lo; i < hi; i++ {
		isum += int32(blk[i/16]&0xF) * q2KValue(blk, i) * int32(q8[i])
	}
	for s := lo / 16; s < hi/16; s++ {
		imin += int32(blk[s]>>4) * int32(bs[s])
	}
	return
}

// dotQ2KVec follows the AVX2 ggml_vec_dot_q2_K_q8_K: per block, lane l
// first gets the mins (mins[2l]*bsum[2l] + mins[2l+1]*bsum[2l+1]) fused
// with -dy*dmin, then the scaled products fused with dy*d.
func dotQ2KVec(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	var acc [8]float32
	for b := range xd {
		blk := w[b*q2KBlockBytes : (b+1)*q2KBlockBytes]
		q8, bs := xq[QKK*b:QKK*(b+1)], xbs[16*b:16*(b+1)]
		var mins, lanes [8]int32
		for l := range mins {
			mins[l] = int32(blk[2*l]>>4)*int32(bs[2*l]) + int32(blk[2*l+1]>>4)*int32(bs[2*l+1])
		}
		for i := 0; i < QKK; i++ {
			lanes[i%32/4] += int32(blk[i/16]&0xF) * q2KValue(blk, i) * int32(q8[i])
		}
		dy := xd[b]
		fmaLanes(&acc, -dy*f16At(blk[82:]), &mins)
		fmaLanes(&acc, dy*f16At(blk[80:]), &lanes)
	}
	return hsum8(&acc)
}

// dotQ2KRepack follows ggml_gemv_q2_K_8x8_q8_K (gemm4 false) and
// ggml_gemm_q2_K_8x8_q8_K (true), which llama.cpp uses for q2_K matrices
// of a multiple of 8 rows: the scaled products and the mins go to two
// chains, fused once per super-block (gemv) or once per 128 values (gemm),
// and the result is their difference.
func dotQ2KRepack(w []byte, xq []int8, xd []float32, xbs []int16, gemm4 bool) float32 {
	var acc, accMin float32
	step := QKK
	if gemm4 {
		step = QKK / 2
	}
	for b := range xd {
		blk := w[b*q2KBlockBytes : (b+1)*q2KBlockBytes]
		q8, bs := xq[QKK*b:QKK*(b+1)], xbs[16*b:16*(b+1)]
		ds, dm := f16At(blk[80:])*xd[b], f16At(blk[82:])*xd[b]
		for lo := 0; lo < QKK; lo += step {
			isum, imin := q2KSums(blk, q8, bs, lo, lo+step)
			acc = FMA32(float32(isum), ds, acc)
			accMin = FMA32(float32(imin), dm, accMin)
		}
	}
	return acc - accMin
}

// dotQ3K follows the AVX2 ggml_vec_dot_q3_K_q8_K: lanes of scaled
// products (quants -4..3, scales -32..31) fused with dy*d per block.
func dotQ3K(w []byte, xq []int8, xd []float32) float32 {
	var acc [8]float32
	for b := range xd {
		blk := w[b*q3KBlockBytes : (b+1)*q3KBlockBytes]
		q8 := xq[QKK*b : QKK*(b+1)]
		sc := q3KScales(blk[96:108])
		var lanes [8]int32
		for i := 0; i < QKK; i++ {
			lanes[i%32/4] += sc[i/16] * q3KValue(blk, i) * int32(q8[i])
		}
		fmaLanes(&acc, xd[b]*f16At(blk[108:]), &lanes)
	}
	return hsum8(&acc)
}

// iq4xsLanes is the integer dot product of one iq4_xs block, in lanes.
func iq4xsLanes(blk []byte, q8 []int8) (lanes [8]int32) {
	for ib := 0; ib < 8; ib++ {
		qs := blk[8+16*ib:]
		lanes32(&lanes, iq4xsScale(blk, ib), q8[32*ib:], func(j int) int32 { return iq4Value(qs, j) })
	}
	return
}

// dotIQ4XS follows the AVX2 ggml_vec_dot_iq4_xs_q8_K (panel false): lanes
// fused with d*dy per block, hsum_float_8; and llama.cpp's IQ panel gemm
// (iqp.cpp, panel true), which it runs on batches of 8 or more tokens
// through an iq4_xs matrix of a multiple of 8 rows: one fused multiply-add
// per block, in order.
func dotIQ4XS(w []byte, xq []int8, xd []float32, panel bool) float32 {
	var acc [8]float32
	var chain float32
	for b := range xd {
		blk := w[b*iq4xsBlockBytes : (b+1)*iq4xsBlockBytes]
		lanes := iq4xsLanes(blk, xq[QKK*b:QKK*(b+1)])
		d := f16At(blk) * xd[b]
		if !panel {
			fmaLanes(&acc, d, &lanes)
			continue
		}
		var isum int32
		for _, v := range lanes {
			isum += v
		}
		chain = FMA32(float32(isum), d, chain)
	}
	if panel {
		return chain
	}
	return hsum8(&acc)
}

// dotLowK is one q8_K-activation weight row of a type of lowbit.go
// against token t of a q8_K batch, as llama.cpp computes that token (mode).
func dotLowK(w *Matrix, row []byte, xk *ActQ8K, t int, mode RowMode) float32 {
	cols := w.Cols
	nb := cols / QKK
	xq, xd, xb := xk.Q[t*cols:(t+1)*cols], xk.D[t*nb:(t+1)*nb], xk.BSums[16*t*nb:16*(t+1)*nb]
	switch w.Type {
	case Q2_K:
		if w.Rows%8 == 0 {
			return dotQ2KRepack(row, xq, xd, xb, mode&RowGemm4 != 0)
		}
		return dotQ2KVec(row, xq, xd, xb)
	case Q3_K:
		return dotQ3K(row, xq, xd)
	}
	return dotIQ4XS(row, xq, xd, w.Rows%8 == 0 && mode&RowPanel8 != 0)
}

// dotLow32 is one q8_0/q8_1-activation weight row of a type of lowbit.go
// against token t, as llama.cpp computes that token (mode).
func (m *mmTask) dotLow32(w *Matrix, row []byte, t int, mode RowMode) float32 {
	nb := m.cols / QK
	xq, xd := m.xq[t*m.cols:(t+1)*m.cols], m.xd[t*nb:(t+1)*nb]
	var xs []float32
	if w.Type.actQ8_1() {
		xs = m.xs1[t*nb : (t+1)*nb]
	}
	switch w.Type {
	case Q4_1:
		return dotQ4_1(row, xq, xd, xs)
	case Q5_0, Q5_1:
		return dotQ5(row, xq, xd, xs, w.Type == Q5_1)
	}
	switch {
	case w.Rows%8 == 0:
		return dotIQ4NLChain(row, xq, xd)
	case mode&RowSgemm != 0:
		return dotIQ4NLSgemm(row, xq, xd)
	}
	return dotIQ4NLVec(row, xq, xd)
}

// rowsLow computes rows [r0, r1) of a matrix of a type of lowbit.go for
// all tokens, in cache blocks: a block of rows stays in L2 while the
// tokens pass.
func (m *mmTask) rowsLow(o *Out, r0, r1 int) {
	w, nOut := o.W, o.W.Rows
	rowBlock := max(1, blockWeights/w.rowBytes)
	for b0 := r0; b0 < r1; b0 += rowBlock {
		b1 := min(r1, b0+rowBlock)
		for t := 0; t < m.T; t++ {
			var mode RowMode
			if m.modes != nil {
				mode = m.modes[t]
			}
			for r := b0; r < b1; r++ {
				row := w.Data[r*w.rowBytes : (r+1)*w.rowBytes]
				if w.Type.actQ8K() {
					o.Y[t*nOut+r] = dotLowK(w, row, &m.xk, t, mode)
				} else {
					o.Y[t*nOut+r] = m.dotLow32(w, row, t, mode)
				}
			}
		}
	}
}

// fillQ8_1Sums sets s[b] to q8_1's block sum for each 32-value block of x
// (quantized to q[b*32:]): as the AVX2 quantize_row_q8_1, the f16 rounding
// of the unrounded scale amax/127 times the sum of the quants.
func fillQ8_1Sums(s []float32, x []float32, q []int8) {
	for b := range s {
		var amax float32
		var sum int32
		for j, v := range x[32*b : 32*b+32] {
			amax = max(amax, abs32(v))
			sum += int32(q[32*b+j])
		}
		s[b] = F16ToF32(F32ToF16(amax / 127 * float32(sum)))
	}
}
