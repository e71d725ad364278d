// exactness: see lowbit.go.

package tensor

// The dot products of the types in lowbit.go, portable Go. Each returns
// what llama.cpp's x86 kernel returns for one weight row against one
// activation row: integer sums are exact whatever their order, so only the
// float steps and which integers land in which of AVX2's eight lanes (lane
// l of a 32-value chunk holds values 4l..4l+3) are reproduced.

// lowRow is one weight row of a type of lowbit.go decoded for the dot
// products, once per product for all its tokens: the quants one int8 per
// value, an integer scale per 16 values (1 for the 32-value types) and
// each block's float scales.
type lowRow struct {
	v      []int8
	sc     []int16
	d      []float32 // per block: d
	m      []float32 // per block: q4_1/q5_1's m, q2_K's dmin
	mn     []int16   // q2_K: the min of each 16 values
	lanes  []int32   // scratch: i8Lanes' output
	lanes2 []int32   // scratch: q2_K's mins and products, block by block
	dd     []float32 // scratch: the float scale of each set of lanes
}

// decode fills r from an encoded row of cols values of type t.
func (r *lowRow) decode(t DType, row []byte, cols int) {
	bl, bb := t.BlockLen(), blockBytes(t)
	nb := cols / bl
	if cap(r.v) < cols {
		r.v, r.sc, r.mn, r.lanes = make([]int8, cols), make([]int16, cols/16), make([]int16, cols/16), make([]int32, cols/4)
		r.d, r.m = make([]float32, cols/QK), make([]float32, cols/QK)
		r.lanes2, r.dd = make([]int32, cols/16), make([]float32, cols/QK)
	}
	r.v, r.sc, r.mn, r.lanes, r.d, r.m = r.v[:cols], r.sc[:cols/16], r.mn[:cols/16], r.lanes[:cols/4], r.d[:nb], r.m[:nb]
	for b := 0; b < nb; b++ {
		blk, v, sc := row[b*bb:(b+1)*bb], r.v[b*bl:(b+1)*bl], r.sc[b*bl/16:(b+1)*bl/16]
		switch t {
		case Q4_1:
			r.d[b], r.m[b] = f16At(blk), f16At(blk[2:])
			for j, q := range blk[4:20] {
				v[j], v[j+16] = int8(q&0xF), int8(q>>4)
			}
		case Q5_0, Q5_1:
			off, bias := 2, int32(16)
			if t == Q5_1 {
				r.m[b], off, bias = f16At(blk[2:]), 4, 0
			}
			r.d[b] = f16At(blk)
			qh := uint32(blk[off]) | uint32(blk[off+1])<<8 | uint32(blk[off+2])<<16 | uint32(blk[off+3])<<24
			for j := range v {
				v[j] = int8(q5Value(blk[off+4:], qh, j) - bias)
			}
		case IQ4_NL:
			r.d[b] = f16At(blk)
			for j, q := range blk[2:18] {
				v[j], v[j+16] = kvaluesIQ4NL[q&0xF], kvaluesIQ4NL[q>>4]
			}
		case MXFP4:
			r.d[b] = e8m0Half(blk[0])
			for j, q := range blk[1:17] {
				v[j], v[j+16] = kvaluesMXFP4[q&0xF], kvaluesMXFP4[q>>4]
			}
		case Q2_K:
			r.d[b], r.m[b] = f16At(blk[80:]), f16At(blk[82:])
			for s := 0; s < 16; s++ {
				sc[s], r.mn[16*b+s] = int16(blk[s]&0xF), int16(blk[s]>>4)
			}
			for n := 0; n < 2; n++ {
				for j := 0; j < 4; j++ {
					for l, q := range blk[16+32*n : 48+32*n] {
						v[128*n+32*j+l] = int8(q >> (2 * uint(j)) & 3)
					}
				}
			}
		case Q3_K:
			r.d[b] = f16At(blk[108:])
			s3 := q3KScales(blk[96:108])
			for s := range sc {
				sc[s] = int16(s3[s])
			}
			for i := range v {
				v[i] = int8(q3KValue(blk, i))
			}
		case IQ4_XS:
			r.d[b] = f16At(blk)
			for ib := 0; ib < 8; ib++ {
				s := int16(iq4xsScale(blk, ib))
				sc[2*ib], sc[2*ib+1] = s, s
				for j, q := range blk[8+16*ib : 24+16*ib] {
					v[32*ib+j], v[32*ib+j+16] = kvaluesIQ4NL[q&0xF], kvaluesIQ4NL[q>>4]
				}
			}
		}
		if bl == QK {
			sc[0], sc[1] = 1, 1
		}
	}
}

// i8LanesGeneric is i8Lanes' portable form: for each group of per
// 32-value chunks of v, q (scale sc per 16 values), 8 int32 lanes into
// out, lane l summing values 4l..4l+3 of each chunk, as AVX2's lanes.
func i8LanesGeneric(v, q []int8, sc []int16, per int, out []int32) {
	clear(out[:len(v)/32/per*8])
	for c := 0; c < len(v)/32; c++ {
		o := out[c/per*8 : c/per*8+8]
		for j := 0; j < 32; j++ {
			o[j/4] += int32(v[32*c+j]) * int32(sc[2*c+j/16]) * int32(q[32*c+j])
		}
	}
}

// fmaLanes is acc[l] = fma(d, lanes[l], acc[l]), the _mm256_fmadd_ps every
// AVX2 kernel ends a block with.
func fmaLanes(acc *[8]float32, d float32, lanes []int32) {
	for l := range acc {
		acc[l] = FMA32(d, float32(lanes[l]), acc[l])
	}
}

// fmaBlocksGeneric is fmaLanes over consecutive blocks: block b's lanes
// lanes[8b:8b+8] with d[b].
func fmaBlocksGeneric(acc *[8]float32, d []float32, lanes []int32) {
	for b, db := range d {
		fmaLanes(acc, db, lanes[8*b:])
	}
}

func sum8(l []int32) int32 { return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7] }

// dot is row r (type t; rows8: its matrix has a multiple of 8 rows)
// against one activation row, with the rounding llama.cpp gives a token of
// that mode: xq, xd the q8_0 or q8_K quants and scales, xs q8_1's block
// sums (q4_1/q5_1), xbs q8_K's sums of 16 (q2_K).
//
//   - q4_1, q5_0, q5_1: the AVX2 ggml_vec_dot_q4_1_q8_1, _q5_0_q8_0,
//     _q5_1_q8_1: per block the lanes fused with d*dy; q4_1/q5_1's m*s in one
//     scalar chain (GCC fuses it), added after hsum_float_8. llamafile's
//     tinyBLAS, which llama.cpp runs on q5_0 batches, rounds the same way.
//   - iq4_nl: with a multiple of 8 rows llama.cpp repacks the matrix
//     (ggml_gemv/gemm_iq4_nl_8x8_q8_0, q4_0's kernels): one fused
//     multiply-add per block, in order. Otherwise batches (RowSgemm) go
//     through tinyBLAS (one set of lanes) and single tokens through
//     ggml_vec_dot_iq4_nl_q8_0: blocks in pairs into two sets of lanes,
//     added lane by lane, an odd last block fused as a scalar.
//   - mxfp4: iq4_nl's kernels with the E8M0 scale (ggml_vec_dot_mxfp4_q8_0,
//     the repacked ggml_gemv/gemm_mxfp4_8x8_q8_0 with a multiple of 8 rows),
//     except that tinyBLAS has no mxfp4 kernel: batches of a matrix that is
//     not repacked go through ggml_vec_dot row by row.
//   - q2_K: repacked with a multiple of 8 rows (ggml_gemv_q2_K_8x8_q8_K /
//     the gemm for RowGemm4 tokens): scaled products and mins in two chains
//     fused once per block (gemv) or per 128 values (gemm), then subtracted.
//     Otherwise ggml_vec_dot_q2_K_q8_K: per block lane l first gets the mins
//     (mins[2l]*bsum[2l] + mins[2l+1]*bsum[2l+1]) fused with -dy*dmin, then
//     the products with dy*d.
//   - q3_K: ggml_vec_dot_q3_K_q8_K: lanes fused with dy*d per block.
//   - iq4_xs: ggml_vec_dot_iq4_xs_q8_K, lanes fused with d*dy per block; for
//     batches of 8 or more tokens (RowPanel8) through a matrix of a multiple
//     of 8 rows, llama.cpp's IQ panel gemm (iqp.cpp): one fused
//     multiply-add per block, in order.
func (r *lowRow) dot(t DType, rows8 bool, mode RowMode, xq []int8, xd, xs []float32, xbs []int16) float32 {
	var acc [8]float32
	var chain, chain2 float32
	switch t {
	case Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4:
		i8Lanes(r.v, xq, r.sc, 1, r.lanes)
		nl := t == IQ4_NL || t == MXFP4
		switch {
		case nl && rows8:
			for b, d := range r.d {
				chain = FMA32(float32(sum8(r.lanes[8*b:])), d*xd[b], chain)
			}
			return chain
		case t == MXFP4 || t == IQ4_NL && mode&RowSgemm == 0:
			var acc2 [8]float32
			nb := len(r.d)
			b := 0
			for ; b+1 < nb; b += 2 {
				fmaLanes(&acc, xd[b]*r.d[b], r.lanes[8*b:])
				fmaLanes(&acc2, xd[b+1]*r.d[b+1], r.lanes[8*b+8:])
			}
			for l := range acc {
				acc[l] += acc2[l]
			}
			sum := hsum8(&acc)
			for ; b < nb; b++ {
				sum = FMA32(xd[b]*r.d[b], float32(sum8(r.lanes[8*b:])), sum)
			}
			return sum
		}
		dd := r.dd[:len(r.d)]
		for b, d := range r.d {
			if t.actQ8_1() {
				chain = FMA32(r.m[b], xs[b], chain)
			}
			dd[b] = d * xd[b]
		}
		fmaBlocks(&acc, dd, r.lanes)
		return hsum8(&acc) + chain
	case Q2_K:
		i8Lanes(r.v, xq, r.sc, 4, r.lanes) // lanes per 128 values
		for b, dy := range xd {
			h := r.lanes[16*b : 16*b+16]
			mn, bs := r.mn[16*b:16*b+16], xbs[16*b:16*b+16]
			if !rows8 {
				l2 := r.lanes2[16*b : 16*b+16]
				for l := 0; l < 8; l++ {
					l2[l] = int32(mn[2*l])*int32(bs[2*l]) + int32(mn[2*l+1])*int32(bs[2*l+1])
					l2[8+l] = h[l] + h[8+l]
				}
				r.dd[2*b], r.dd[2*b+1] = -dy*r.m[b], dy*r.d[b]
				continue
			}
			var imin [2]int32
			for s := range mn {
				imin[s/8] += int32(mn[s]) * int32(bs[s])
			}
			ds, dm := r.d[b]*dy, r.m[b]*dy
			if mode&RowGemm4 != 0 {
				for k := 0; k < 2; k++ {
					chain = FMA32(float32(sum8(h[8*k:])), ds, chain)
					chain2 = FMA32(float32(imin[k]), dm, chain2)
				}
				continue
			}
			chain = FMA32(float32(sum8(h)+sum8(h[8:])), ds, chain)
			chain2 = FMA32(float32(imin[0]+imin[1]), dm, chain2)
		}
		if rows8 {
			return chain - chain2
		}
		fmaBlocks(&acc, r.dd[:2*len(xd)], r.lanes2)
		return hsum8(&acc)
	}
	// q3_K, iq4_xs
	i8Lanes(r.v, xq, r.sc, 8, r.lanes)
	panel := t == IQ4_XS && rows8 && mode&RowPanel8 != 0
	if panel {
		for b, dy := range xd {
			chain = FMA32(float32(sum8(r.lanes[8*b:])), r.d[b]*dy, chain)
		}
		return chain
	}
	dd := r.dd[:len(xd)]
	for b, dy := range xd {
		dd[b] = dy * r.d[b]
	}
	fmaBlocks(&acc, dd, r.lanes)
	return hsum8(&acc)
}

// rowsLow computes rows [r0, r1) of a matrix of a type of lowbit.go for
// all tokens: each row is decoded once (into r) and every token passes
// over it.
func (m *mmTask) rowsLow(o *Out, r *lowRow, r0, r1 int) {
	w, nOut, cols := o.W, o.W.Rows, m.cols
	rows8 := w.Rows%8 == 0
	for row := r0; row < r1; row++ {
		r.decode(w.Type, w.Data[row*w.rowBytes:(row+1)*w.rowBytes], cols)
		for t := 0; t < m.T; t++ {
			var mode RowMode
			if m.modes != nil {
				mode = m.modes[t]
			}
			var y float32
			if w.Type.actQ8K() {
				nb := cols / QKK
				y = r.dot(w.Type, rows8, mode, m.xk.Q[t*cols:(t+1)*cols], m.xk.D[t*nb:(t+1)*nb], nil, m.xk.BSums[16*t*nb:16*(t+1)*nb])
			} else {
				nb := cols / QK
				var xs []float32
				if w.Type.actQ8_1() {
					xs = m.xs1[t*nb : (t+1)*nb]
				}
				y = r.dot(w.Type, rows8, mode, m.xq[t*cols:(t+1)*cols], m.xd[t*nb:(t+1)*nb], xs, nil)
			}
			o.Y[t*nOut+row] = y
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
