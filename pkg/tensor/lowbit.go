// exactness: the kernels of the types in this file (lowbit_dot.go)
// reproduce the rounding of llama.cpp's CPU backend on this machine bit for
// bit; checked against the library itself by TestLowBitMatchesLlamaCpp
// (testdata/lowbit_ref.bin).

package tensor

import (
	"encoding/binary"
	"math"
)

// The other ggml block types that llama-quantize writes into Q2_K,
// Q3_K_*, IQ4_NL, IQ4_XS, Q4_1, Q5_0 and Q5_1 files, and MXFP4 (gpt-oss's
// expert tensors). Block layouts (ggml's block_q4_1, ... structs):
//
//	q4_1   32 values, 20 bytes: f16 d, f16 m, u8 qs[16]
//	q5_0   32 values, 22 bytes: f16 d, u8 qh[4], u8 qs[16]
//	q5_1   32 values, 24 bytes: f16 d, f16 m, u8 qh[4], u8 qs[16]
//	iq4_nl 32 values, 18 bytes: f16 d, u8 qs[16] (indices into kvaluesIQ4NL)
//	q2_K  256 values, 84 bytes: u8 scales[16], u8 qs[64], f16 d, f16 dmin
//	q3_K  256 values, 110 bytes: u8 hmask[32], u8 qs[64], u8 scales[12], f16 d
//	iq4_xs 256 values, 136 bytes: f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]
//	mxfp4  32 values, 17 bytes: u8 e (E8M0 scale), u8 qs[16] (indices into
//	       kvaluesMXFP4; value j low nibble of qs[j], j+16 the high one)
const (
	q41BlockBytes   = 20
	q50BlockBytes   = 22
	q51BlockBytes   = 24
	iq4nlBlockBytes = 18
	q2KBlockBytes   = 84
	q3KBlockBytes   = 110
	iq4xsBlockBytes = 136
	mxfp4BlockBytes = 17
)

// kvaluesIQ4NL is ggml's non-linear 4-bit grid of iq4_nl / iq4_xs.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// kvaluesMXFP4 is ggml's kvalues_mxfp4: the FP4 (e2m1) values doubled, so
// that they are integers; the block scale is halved to match (e8m0Half).
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half is ggml_e8m0_to_fp32_half: 2^(e-128), the E8M0 scale 2^(e-127)
// times one half, with ggml's bit patterns for the two subnormal results.
func e8m0Half(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// lowBit reports whether d is one of the types of this file.
func (d DType) lowBit() bool { return d >= Q4_1 && d <= MXFP4 }

// actQ8K reports whether d's dot products take activations quantized to
// q8_K (ggml's vec_dot_type); the others take q8_0 (q8_1 for q4_1/q5_1).
func (d DType) actQ8K() bool { return d.KQuant() || d == Q2_K || d == Q3_K || d == IQ4_XS }

// actQ8_1 reports whether d pairs with q8_1 activations (q8_0's values and
// scale plus s = d * sum of the block).
func (d DType) actQ8_1() bool { return d == Q4_1 || d == Q5_1 }

// blockBytes is the encoded size of one block of quantized type d.
func blockBytes(d DType) int {
	switch d {
	case Q8_0:
		return q8BlockBytes
	case Q4_0:
		return q4BlockBytes
	case Q4_1:
		return q41BlockBytes
	case Q5_0:
		return q50BlockBytes
	case Q5_1:
		return q51BlockBytes
	case IQ4_NL:
		return iq4nlBlockBytes
	case Q2_K:
		return q2KBlockBytes
	case Q3_K:
		return q3KBlockBytes
	case IQ4_XS:
		return iq4xsBlockBytes
	case MXFP4:
		return mxfp4BlockBytes
	}
	return kBlockBytes(d)
}

func f16At(b []byte) float32 { return F16ToF32(binary.LittleEndian.Uint16(b)) }

// q5Value returns value j (0..31) of a q5_0/q5_1 block's quants as 0..31.
func q5Value(qs []byte, qh uint32, j int) int32 {
	if j < 16 {
		return int32(qs[j]&0xF) | int32(qh>>uint(j)&1)<<4
	}
	return int32(qs[j-16]>>4) | int32(qh>>uint(j)&1)<<4
}

// q3KScales unpacks the 16 6-bit scales of a q3_K block, minus 32.
func q3KScales(s []byte) (sc [16]int32) {
	for j := 0; j < 16; j++ {
		lo := s[j%8] >> (4 * uint(j/8)) & 0xF
		hi := s[8+j%4] >> (2 * uint(j/4)) & 3
		sc[j] = int32(lo|hi<<4) - 32
	}
	return
}

// q3KValue returns value i (0..255) of a q3_K block as -4..3.
func q3KValue(blk []byte, i int) int32 {
	hm, qs := blk[0:32], blk[32:96]
	n, j, l := i/128, i%128/32, i%32
	v := int32(qs[32*n+l] >> (2 * uint(j)) & 3)
	if hm[l]>>uint(4*n+j)&1 == 0 {
		v -= 4
	}
	return v
}

// q2KValue returns value i (0..255) of a q2_K block's quants (0..3).
func q2KValue(blk []byte, i int) int32 {
	n, j, l := i/128, i%128/32, i%32
	return int32(blk[16+32*n+l] >> (2 * uint(j)) & 3)
}

// iq4xsScale returns the scale of 32-value sub-block ib of an iq4_xs
// block, -32..31.
func iq4xsScale(blk []byte, ib int) int32 {
	sh := binary.LittleEndian.Uint16(blk[2:])
	return int32(blk[4+ib/2]>>(4*uint(ib%2))&0xF|byte(sh>>(2*uint(ib))&3)<<4) - 32
}

// iq4Value returns value j (0..31) of 16 iq4 index bytes.
func iq4Value(qs []byte, j int) int32 {
	if j < 16 {
		return int32(kvaluesIQ4NL[qs[j]&0xF])
	}
	return int32(kvaluesIQ4NL[qs[j-16]>>4])
}

// dequantizeLow decodes the types of this file as ggml's dequantize_row_*
// do (same float operations, unfused, as llama.cpp's libggml-base
// computes them).
func dequantizeLow(t DType, src []byte, dst []float32) {
	bl, bb := t.BlockLen(), blockBytes(t)
	for b := 0; b < len(dst)/bl; b++ {
		blk, y := src[b*bb:(b+1)*bb], dst[b*bl:(b+1)*bl]
		switch t {
		case Q4_1:
			d, m := f16At(blk), f16At(blk[2:])
			for j := 0; j < 16; j++ {
				q := blk[4+j]
				y[j] = float32(float32(q&0xF)*d) + m
				y[j+16] = float32(float32(q>>4)*d) + m
			}
		case Q5_0, Q5_1:
			d, m, off := f16At(blk), float32(0), 2
			if t == Q5_1 {
				m, off = f16At(blk[2:]), 4
			}
			qh := binary.LittleEndian.Uint32(blk[off:])
			for j := range y {
				q := q5Value(blk[off+4:], qh, j)
				if t == Q5_0 {
					y[j] = float32(q-16) * d
				} else {
					y[j] = float32(float32(q)*d) + m
				}
			}
		case IQ4_NL:
			d := f16At(blk)
			for j := range y {
				y[j] = d * float32(iq4Value(blk[2:], j))
			}
		case Q2_K:
			d, dmin := f16At(blk[80:]), f16At(blk[82:])
			for i := range y {
				sc := blk[i/16]
				dl, ml := d*float32(sc&0xF), dmin*float32(sc>>4)
				y[i] = float32(dl*float32(q2KValue(blk, i))) - ml
			}
		case Q3_K:
			d := f16At(blk[108:])
			sc := q3KScales(blk[96:108])
			for i := range y {
				y[i] = d * float32(sc[i/16]) * float32(q3KValue(blk, i))
			}
		case MXFP4:
			d := e8m0Half(blk[0])
			for j, q := range blk[1:17] {
				y[j] = float32(kvaluesMXFP4[q&0xF]) * d
				y[j+16] = float32(kvaluesMXFP4[q>>4]) * d
			}
		case IQ4_XS:
			d := f16At(blk)
			for ib := 0; ib < 8; ib++ {
				dl := d * float32(iq4xsScale(blk, ib))
				for j := 0; j < 32; j++ {
					y[32*ib+j] = dl * float32(iq4Value(blk[8+16*ib:], j))
				}
			}
		}
	}
}

// quantizeLow encodes src as type t with plain quantizers: the 32-value
// types as ggml's reference quantizers (quantize_row_q4_1_ref, ...), the
// others by per-block min/max scales and the nearest grid value. Files
// written with them are valid and llama.cpp reads them identically (which
// is what gen-model's random-weight models need), not llama-quantize's
// error-minimizing search.
func quantizeLow(t DType, src []float32, dst []byte) {
	bl, bb := t.BlockLen(), blockBytes(t)
	for b := 0; b < len(src)/bl; b++ {
		x, blk := src[b*bl:(b+1)*bl], dst[b*bb:(b+1)*bb]
		clear(blk)
		switch t {
		case Q4_1, Q5_1:
			lo, hi := x[0], x[0]
			for _, v := range x {
				lo, hi = min(lo, v), max(hi, v)
			}
			qmax := float32(15)
			if t == Q5_1 {
				qmax = 31
			}
			d := (hi - lo) / qmax
			var id float32
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			binary.LittleEndian.PutUint16(blk[2:], F32ToF16(lo))
			var q [32]int32
			for j, v := range x {
				q[j] = int32(min(qmax, float32(int32(float32((v-lo)*id)+0.5))))
			}
			if t == Q4_1 {
				for j := 0; j < 16; j++ {
					blk[4+j] = byte(q[j]) | byte(q[j+16])<<4
				}
			} else {
				putQ5(blk[4:], q)
			}
		case Q5_0:
			var amax, mx float32
			for _, v := range x {
				if abs32(v) > amax {
					amax, mx = abs32(v), v
				}
			}
			d := mx / -16
			var id float32
			if d != 0 {
				id = 1 / d
			}
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			var q [32]int32
			for j, v := range x {
				q[j] = min(31, int32(float32(v*id)+16.5))
			}
			putQ5(blk[2:], q)
		case IQ4_NL:
			d := iq4Scale(x)
			binary.LittleEndian.PutUint16(blk, F32ToF16(d))
			putIQ4(blk[2:18], x, F16ToF32(F32ToF16(d)))
		case IQ4_XS:
			quantizeIQ4XS(x, blk)
		case MXFP4:
			quantizeMXFP4(x, blk)
		case Q2_K:
			quantizeQ2K(x, blk)
		case Q3_K:
			quantizeQ3K(x, blk)
		}
	}
}

// putQ5 stores 32 5-bit quants as qh[4] then qs[16].
func putQ5(b []byte, q [32]int32) {
	var qh uint32
	for j := 0; j < 16; j++ {
		b[4+j] = byte(q[j]&0xF) | byte(q[j+16]&0xF)<<4
		qh |= uint32(q[j]>>4&1)<<uint(j) | uint32(q[j+16]>>4&1)<<uint(j+16)
	}
	binary.LittleEndian.PutUint32(b, qh)
}

// iq4Scale is the step mapping x's value of largest magnitude onto the
// grid's end value of the same sign.
func iq4Scale(x []float32) float32 {
	var amax, mx float32
	for _, v := range x {
		if abs32(v) > amax {
			amax, mx = abs32(v), v
		}
	}
	return mx / -127
}

// putIQ4 stores the nearest grid index of each of 32 values for step d.
func putIQ4(qs []byte, x []float32, d float32) {
	for j := 0; j < 16; j++ {
		qs[j] = nearestIQ4(x[j], d) | nearestIQ4(x[j+16], d)<<4
	}
}

func nearestIQ4(v, d float32) byte {
	if d == 0 {
		return 8 // the grid value nearest 0 (1)
	}
	t := v / d
	best, be := 0, float32(math.Inf(1))
	for i, g := range kvaluesIQ4NL {
		if e := abs32(t - float32(g)); e < be {
			best, be = i, e
		}
	}
	return byte(best)
}

// quantizeMXFP4 is ggml's quantize_row_mxfp4_ref for one block: the
// exponent floor(log2(amax)) - 2 (so amax lands in the grid's top octave),
// then each value's nearest grid point, the first of equals.
func quantizeMXFP4(x []float32, blk []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	var e byte
	if amax > 0 {
		// log2f is exact at powers of two, where the floor could differ.
		e = byte(max(0, min(255, math.Floor(math.Log2(float64(amax)))-2+127)))
	}
	blk[0] = e
	d := e8m0Half(e)
	for j := 0; j < 16; j++ {
		blk[1+j] = nearestMXFP4(x[j], d) | nearestMXFP4(x[j+16], d)<<4
	}
}

func nearestMXFP4(v, d float32) byte {
	best, be := 0, abs32(float32(kvaluesMXFP4[0])*d-v)
	for i := 1; i < 16; i++ {
		if e := abs32(float32(kvaluesMXFP4[i])*d - v); e < be {
			best, be = i, e
		}
	}
	return byte(best)
}

func quantizeIQ4XS(x []float32, blk []byte) {
	var sub [8]float32
	var amax float32
	for ib := range sub {
		sub[ib] = iq4Scale(x[32*ib : 32*ib+32])
		amax = max(amax, abs32(sub[ib]))
	}
	d := F16ToF32(F32ToF16(amax / 32))
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	var sh uint16
	for ib, s := range sub {
		var ls int32
		if d > 0 {
			ls = int32(max(-32, min(31, roundAway(s/d))))
		}
		u := byte(ls + 32)
		blk[4+ib/2] |= (u & 0xF) << (4 * uint(ib%2))
		sh |= uint16(u>>4) << (2 * uint(ib))
		putIQ4(blk[8+16*ib:24+16*ib], x[32*ib:32*ib+32], d*float32(ls))
	}
	binary.LittleEndian.PutUint16(blk[2:], sh)
}

func quantizeQ2K(x []float32, blk []byte) {
	var scale, minv [16]float32
	var maxScale, maxMin float32
	for s := 0; s < 16; s++ {
		lo, hi := float32(0), x[16*s]
		for _, v := range x[16*s : 16*s+16] {
			lo, hi = min(lo, v), max(hi, v)
		}
		scale[s], minv[s] = (hi-lo)/3, -lo
		maxScale, maxMin = max(maxScale, scale[s]), max(maxMin, minv[s])
	}
	d, dmin := F16ToF32(F32ToF16(maxScale/15)), F16ToF32(F32ToF16(maxMin/15))
	binary.LittleEndian.PutUint16(blk[80:], F32ToF16(d))
	binary.LittleEndian.PutUint16(blk[82:], F32ToF16(dmin))
	for s := 0; s < 16; s++ {
		var sc, mn byte
		if d > 0 {
			sc = byte(min(15, roundAway(scale[s]/d)))
		}
		if dmin > 0 {
			mn = byte(min(15, roundAway(minv[s]/dmin)))
		}
		blk[s] = sc | mn<<4
	}
	for i, v := range x {
		sc := blk[i/16]
		var l int32
		if step := d * float32(sc&0xF); step > 0 {
			l = int32(max(0, min(3, roundAway((v+dmin*float32(sc>>4))/step))))
		}
		n, j, p := i/128, i%128/32, i%32
		blk[16+32*n+p] |= byte(l) << (2 * uint(j))
	}
}

func quantizeQ3K(x []float32, blk []byte) {
	var scale [16]float32
	var amax float32
	for s := 0; s < 16; s++ {
		var m, mx float32
		for _, v := range x[16*s : 16*s+16] {
			if abs32(v) > m {
				m, mx = abs32(v), v
			}
		}
		scale[s] = mx / -4 // the largest magnitude maps to -4 or just under 4
		amax = max(amax, abs32(scale[s]))
	}
	d := F16ToF32(F32ToF16(amax / 32))
	binary.LittleEndian.PutUint16(blk[108:], F32ToF16(d))
	var sc [16]int32
	for s := range sc {
		if d > 0 {
			sc[s] = int32(max(-32, min(31, roundAway(scale[s]/d))))
		}
		u := byte(sc[s] + 32)
		blk[96+s%8] |= (u & 0xF) << (4 * uint(s/8))
		blk[96+8+s%4] |= (u >> 4) << (2 * uint(s/4))
	}
	for i, v := range x {
		var l int32
		if step := d * float32(sc[i/16]); step != 0 {
			l = int32(max(-4, min(3, roundAway(v/step))))
		}
		u := l + 4
		n, j, p := i/128, i%128/32, i%32
		blk[32+32*n+p] |= byte(u&3) << (2 * uint(j))
		if u >= 4 {
			blk[p] |= 1 << uint(4*n+j)
		}
	}
}
