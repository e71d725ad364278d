// exactness: see kquant.go.

package tensor

import "encoding/binary"

// The portable K-quant dot products. Each returns what llama.cpp's x86
// kernel returns for one weight row against one q8_K activation row:
// integer sums are exact whatever their order, so only the float steps
// (and, for q5_K/q6_K, which integers land in which of AVX2's eight lanes)
// are reproduced here; the assembly kernels do the same steps.

// dotQ4KGeneric follows ggml_gemv_q4_K_8x8_q8_K for one row: per
// super-block acc += isum * (d*dy) and accMin += imin * (dmin*dy), both
// fused, and acc - accMin at the end.
func dotQ4KGeneric(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	var acc, accMin float32
	for b := 0; b < len(xd); b++ {
		blk := w[b*q4KBlockBytes : (b+1)*q4KBlockBytes]
		q8 := xq[b*QKK : (b+1)*QKK]
		bs := xbs[16*b : 16*b+16]
		sc, mn := kScalesMins(blk[4:16])
		qs := blk[16:144]
		var isum, imin int32
		for j := 0; j < 4; j++ {
			var s0, s1 int32
			for l := 0; l < 32; l++ {
				q := qs[32*j+l]
				s0 += int32(q&0xF) * int32(q8[64*j+l])
				s1 += int32(q>>4) * int32(q8[64*j+32+l])
			}
			isum += sc[2*j]*s0 + sc[2*j+1]*s1
		}
		for s := 0; s < 8; s++ {
			imin += mn[s] * (int32(bs[2*s]) + int32(bs[2*s+1]))
		}
		dw := F16ToF32(binary.LittleEndian.Uint16(blk))
		dm := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		acc = FMA32(float32(isum), dw*xd[b], acc)
		accMin = FMA32(float32(imin), dm*xd[b], accMin)
	}
	return acc - accMin
}

// dotQ4KGemmGeneric follows ggml_gemm_q4_K_8x8_q8_K (tokens in fours):
// as dotQ4KGeneric, but both sums are fused into their accumulators once
// per pair of 32-value sub-blocks instead of once per super-block.
func dotQ4KGemmGeneric(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	var acc, accMin float32
	for b := 0; b < len(xd); b++ {
		blk := w[b*q4KBlockBytes : (b+1)*q4KBlockBytes]
		q8 := xq[b*QKK : (b+1)*QKK]
		bs := xbs[16*b : 16*b+16]
		sc, mn := kScalesMins(blk[4:16])
		qs := blk[16:144]
		ds := F16ToF32(binary.LittleEndian.Uint16(blk)) * xd[b]
		dm := F16ToF32(binary.LittleEndian.Uint16(blk[2:])) * xd[b]
		for j := 0; j < 4; j++ {
			var s0, s1 int32
			for l := 0; l < 32; l++ {
				q := qs[32*j+l]
				s0 += int32(q&0xF) * int32(q8[64*j+l])
				s1 += int32(q>>4) * int32(q8[64*j+32+l])
			}
			isum := sc[2*j]*s0 + sc[2*j+1]*s1
			imin := mn[2*j]*(int32(bs[4*j])+int32(bs[4*j+1])) + mn[2*j+1]*(int32(bs[4*j+2])+int32(bs[4*j+3]))
			acc = FMA32(float32(isum), ds, acc)
			accMin = FMA32(float32(imin), dm, accMin)
		}
	}
	return acc - accMin
}

// hsum8 is ggml's hsum_float_8: (a4+a0 + a6+a2) + (a5+a1 + a7+a3).
func hsum8(a *[8]float32) float32 {
	r0, r1, r2, r3 := a[4]+a[0], a[5]+a[1], a[6]+a[2], a[7]+a[3]
	return (r0 + r2) + (r1 + r3)
}

// dotQ5KGeneric follows the AVX2 ggml_vec_dot_q5_K_q8_K: lane l of eight
// int32 lanes sums, over the block's 64-value chunks j, scale[2j] times
// the products of values 64j+4l..+3 plus scale[2j+1] times those of
// 64j+32+4l..+3; each lane is fused into its own float accumulator with
// d*dy; the mins go to one scalar chain (GCC fused it: summs += dmin*imin).
func dotQ5KGeneric(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	var acc [8]float32
	var summs float32
	for b := 0; b < len(xd); b++ {
		blk := w[b*q5KBlockBytes : (b+1)*q5KBlockBytes]
		q8 := xq[b*QKK : (b+1)*QKK]
		bs := xbs[16*b : 16*b+16]
		sc, mn := kScalesMins(blk[4:16])
		qh, qs := blk[16:48], blk[48:176]
		var imin int32
		for s := 0; s < 8; s++ {
			imin += mn[s] * (int32(bs[2*s]) + int32(bs[2*s+1]))
		}
		dy := xd[b]
		dmin := -dy * F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		summs = FMA32(dmin, float32(imin), summs)
		var lanes [8]int32
		for j := 0; j < 4; j++ {
			for l := 0; l < 32; l++ {
				q := qs[32*j+l]
				h := qh[l] >> (2 * uint(j))
				v0 := int32(q&0xF) | int32(h&1)<<4
				v1 := int32(q>>4) | int32(h>>1&1)<<4
				lanes[l/4] += sc[2*j]*v0*int32(q8[64*j+l]) + sc[2*j+1]*v1*int32(q8[64*j+32+l])
			}
		}
		d := dy * F16ToF32(binary.LittleEndian.Uint16(blk))
		for l := range acc {
			acc[l] = FMA32(d, float32(lanes[l]), acc[l])
		}
	}
	return hsum8(&acc) + summs
}

// dotQ6KGeneric follows the AVX2 ggml_vec_dot_q6_K_q8_K: lane l sums, over
// the eight 32-value chunks c, scale[2c + l/4] times the products of
// values 32c+4l..+3 (quants 0..63), minus 32*(bsum[2l]*scale[2l] +
// bsum[2l+1]*scale[2l+1]); lanes are fused with d*dy into eight float
// accumulators, reduced as hsum_float_8.
func dotQ6KGeneric(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	var acc [8]float32
	for b := 0; b < len(xd); b++ {
		blk := w[b*q6KBlockBytes : (b+1)*q6KBlockBytes]
		q8 := xq[b*QKK : (b+1)*QKK]
		bs := xbs[16*b : 16*b+16]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		var lanes [8]int32
		for n := 0; n < 2; n++ {
			for l := 0; l < 32; l++ {
				a, c, h := ql[64*n+l], ql[64*n+32+l], qh[32*n+l]
				v := [4]int32{int32(a&0xF | (h&3)<<4), int32(c&0xF | (h>>2&3)<<4),
					int32(a>>4 | (h>>4&3)<<4), int32(c>>4 | (h>>6&3)<<4)}
				for k := 0; k < 4; k++ {
					ch := 4*n + k // 32-value chunk
					lanes[l/4] += int32(int8(sc[2*ch+l/16])) * v[k] * int32(q8[32*ch+l])
				}
			}
		}
		for l := range lanes {
			lanes[l] -= 32 * (int32(bs[2*l])*int32(int8(sc[2*l])) + int32(bs[2*l+1])*int32(int8(sc[2*l+1])))
		}
		d := xd[b] * F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
		for l := range acc {
			acc[l] = FMA32(d, float32(lanes[l]), acc[l])
		}
	}
	return hsum8(&acc)
}

// dotKRowsGeneric is dot on len(out) consecutive rows of bb-byte blocks.
func dotKRowsGeneric(dot func(w []byte, xq []int8, xd []float32, xbs []int16) float32, bb int, w []byte, xq []int8, xd []float32, xbs []int16, out []float32) {
	rb := len(xd) * bb
	for r := range out {
		out[r] = dot(w[r*rb:(r+1)*rb], xq, xd, xbs)
	}
}

// dotQ5Kx4Generic and dotQ6Kx4Generic are dotQ5KGeneric / dotQ6KGeneric
// on each of four consecutive tokens.
func dotQ5Kx4Generic(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	dotKx4(dotQ5KGeneric, w, xq, xd, xbs, out)
}

func dotQ6Kx4Generic(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	dotKx4(dotQ6KGeneric, w, xq, xd, xbs, out)
}

func dotKx4(dot func(w []byte, xq []int8, xd []float32, xbs []int16) float32, w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32) {
	nb := len(xd) / 4
	for t := range out {
		out[t] = dot(w, xq[t*nb*QKK:(t+1)*nb*QKK], xd[t*nb:(t+1)*nb], xbs[16*t*nb:16*(t+1)*nb])
	}
}

// dotQ4KVecGeneric follows the AVX2 ggml_vec_dot_q4_K_q8_K, which
// llama.cpp uses for q4_K matrices it does not repack (rows not a multiple
// of 8): lanes as dotQ5KGeneric's, the mins in four fused lanes
// (mins[2k]*sum[2k] + mins[2k+1]*sum[2k+1]) reduced (m0+m2) + (m1+m3).
func dotQ4KVecGeneric(w []byte, xq []int8, xd []float32, xbs []int16) float32 {
	var acc [8]float32
	var accM [4]float32
	for b := 0; b < len(xd); b++ {
		blk := w[b*q4KBlockBytes : (b+1)*q4KBlockBytes]
		q8 := xq[b*QKK : (b+1)*QKK]
		bs := xbs[16*b : 16*b+16]
		sc, mn := kScalesMins(blk[4:16])
		qs := blk[16:144]
		dy := xd[b]
		dmin := -dy * F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		for k := 0; k < 4; k++ {
			p := mn[2*k]*(int32(bs[4*k])+int32(bs[4*k+1])) + mn[2*k+1]*(int32(bs[4*k+2])+int32(bs[4*k+3]))
			accM[k] = FMA32(dmin, float32(p), accM[k])
		}
		var lanes [8]int32
		for j := 0; j < 4; j++ {
			for l := 0; l < 32; l++ {
				q := qs[32*j+l]
				lanes[l/4] += sc[2*j]*int32(q&0xF)*int32(q8[64*j+l]) + sc[2*j+1]*int32(q>>4)*int32(q8[64*j+32+l])
			}
		}
		d := dy * F16ToF32(binary.LittleEndian.Uint16(blk))
		for l := range acc {
			acc[l] = FMA32(d, float32(lanes[l]), acc[l])
		}
	}
	return hsum8(&acc) + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
}

// dotK is one K-quant weight row against token t of a q8_K batch; gemm4
// selects the rounding of llama.cpp's q4_K gemm (RowGemm4).
func dotK(w *Matrix, row []byte, xk *ActQ8K, t int, gemm4 bool) float32 {
	cols := w.Cols
	nb := cols / QKK
	xq, xd, xb := xk.Q[t*cols:(t+1)*cols], xk.D[t*nb:(t+1)*nb], xk.BSums[16*t*nb:16*(t+1)*nb]
	switch {
	case w.Type == Q4_K && w.Rows%8 == 0 && gemm4:
		return dotQ4KGemm(row, xq, xd, xb)
	case w.Type == Q4_K && w.Rows%8 == 0:
		return dotQ4K(row, xq, xd, xb)
	case w.Type == Q4_K:
		return dotQ4KVecGeneric(row, xq, xd, xb)
	case w.Type == Q5_K:
		return dotQ5K(row, xq, xd, xb)
	}
	return dotQ6K(row, xq, xd, xb)
}

// rowsK computes rows [r0, r1) of a K-quant matrix for all tokens, in
// cache blocks: a block of rows stays in L2 while the tokens pass. q5_K
// and q6_K rows take four consecutive tokens at a time (dotQ5Kx4,
// dotQ6Kx4: the same bits per token, each weight block decoded once for
// the four), the tokens left over a whole block per call (dotQ5KRows,
// dotQ6KRows).
func (m *mmTask) rowsK(o *Out, r0, r1 int) {
	w, nOut, cols := o.W, o.W.Rows, m.cols
	nb := cols / QKK
	rowBlock := max(1, blockWeights/w.rowBytes)
	var x4 func(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32)
	var rows func(w []byte, xq []int8, xd []float32, xbs []int16, out []float32)
	switch w.Type {
	case Q5_K:
		x4, rows = dotQ5Kx4, dotQ5KRows
	case Q6_K:
		x4, rows = dotQ6Kx4, dotQ6KRows
	}
	var res [4]float32
	for b0 := r0; b0 < r1; b0 += rowBlock {
		b1 := min(r1, b0+rowBlock)
		t := 0
		for ; x4 != nil && t+4 <= m.T; t += 4 {
			xq, xd, xb := m.xk.Q[t*cols:(t+4)*cols], m.xk.D[t*nb:(t+4)*nb], m.xk.BSums[16*t*nb:16*(t+4)*nb]
			for r := b0; r < b1; r++ {
				x4(w.Data[r*w.rowBytes:(r+1)*w.rowBytes], xq, xd, xb, &res)
				for k, v := range res {
					o.Y[(t+k)*nOut+r] = v
				}
			}
		}
		for ; t < m.T; t++ {
			if rows != nil {
				xq, xd, xb := m.xk.Q[t*cols:(t+1)*cols], m.xk.D[t*nb:(t+1)*nb], m.xk.BSums[16*t*nb:16*(t+1)*nb]
				rows(w.Data[b0*w.rowBytes:b1*w.rowBytes], xq, xd, xb, o.Y[t*nOut+b0:t*nOut+b1])
				continue
			}
			for r := b0; r < b1; r++ {
				o.Y[t*nOut+r] = dotK(w, w.Data[r*w.rowBytes:(r+1)*w.rowBytes], &m.xk, t, m.modes != nil && m.modes[t]&RowGemm4 != 0)
			}
		}
	}
}

// rowsQ4Kx8 computes rows [r0, r1) (multiples of 8) of a packed q4_K
// matrix: a block of groups stays in L2 while every token passes, eight
// or four consecutive tokens of the same rounding at a time where they can
// (q4Kx16x8 and q4Kx8x4 split each weight byte once for the eight or four)
// and one at a time otherwise; either way a token gets the same bits.
func (m *mmTask) rowsQ4Kx8(o *Out, r0, r1 int) {
	w, cols, nOut := o.W, m.cols, o.W.Rows
	nb := cols / QKK
	gb := nb * q4Kx8GroupBytes
	groupBlock := max(1, blockWeights/gb)
	gemm := func(t int) bool { return m.modes != nil && m.modes[t]&RowGemm4 != 0 }
	// same reports whether tokens t..t+n-1 exist and share t's rounding.
	same := func(t, n int) bool {
		if t+n > m.T {
			return false
		}
		for k := 1; k < n; k++ {
			if gemm(t+k) != gemm(t) {
				return false
			}
		}
		return true
	}
	var res4 [32]float32
	var res16 [64]float32
	var res32 [128]float32
	for b0 := r0 / 8; b0 < r1/8; b0 += groupBlock {
		b1 := min(r1/8, b0+groupBlock)
		for t := 0; t < m.T; {
			g4 := gemm(t)
			if same(t, 4) {
				n, g8 := 4, b0
				// Eight tokens against two groups per 512-bit register where
				// the CPU has them; the group left over (and every group
				// on other CPUs) four tokens at a time below.
				if same(t, 8) {
					n = 8
					xq, xd, xb := m.xk.Q[t*cols:(t+8)*cols], m.xk.D[t*nb:(t+8)*nb], m.xk.BSums[16*t*nb:16*(t+8)*nb]
					for ; g8+2 <= b1 && q4Kx16x8(w.k4[g8*gb:(g8+2)*gb], nb, xq, xd, xb, g4, &res32); g8 += 2 {
						for k := 0; k < 8; k++ {
							copy(o.Y[(t+k)*nOut+8*g8:(t+k)*nOut+8*g8+16], res32[16*k:16*k+16])
						}
					}
				}
				for t4 := t; t4 < t+n; t4 += 4 {
					xq, xd, xb := m.xk.Q[t4*cols:(t4+4)*cols], m.xk.D[t4*nb:(t4+4)*nb], m.xk.BSums[16*t4*nb:16*(t4+4)*nb]
					g := g8
					// Two groups per 512-bit register where the CPU has them.
					for ; g+2 <= b1 && q4Kx16x4(w.k4[g*gb:(g+2)*gb], nb, xq, xd, xb, g4, &res16); g += 2 {
						for k := 0; k < 4; k++ {
							copy(o.Y[(t4+k)*nOut+8*g:(t4+k)*nOut+8*g+16], res16[16*k:16*k+16])
						}
					}
					for ; g < b1; g++ {
						q4Kx8x4(w.k4[g*gb:(g+1)*gb], nb, xq, xd, xb, g4, &res4)
						for k := 0; k < 4; k++ {
							copy(o.Y[(t4+k)*nOut+8*g:(t4+k)*nOut+8*g+8], res4[8*k:8*k+8])
						}
					}
				}
				t += n
				continue
			}
			xq, xd, xs := m.xk.Q[t*cols:(t+1)*cols], m.xk.D[t*nb:(t+1)*nb], m.xk.S[8*t*nb:8*(t+1)*nb]
			q4Kx8Rows(w.k4[b0*gb:b1*gb], nb, xq, xd, xs, g4, o.Y[t*nOut+8*b0:t*nOut+8*b1])
			t++
		}
	}
}
