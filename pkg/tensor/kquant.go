// exactness: the K-quant kernels (kquant*.go/.s) reproduce the rounding of
// llama.cpp's CPU backend on this machine bit for bit: activations
// quantized as quantize_row_q8_K_ref, q4_K through the repacked 8x8 gemv /
// gemm (ggml-cpu/arch/x86/repack.cpp, which llama.cpp uses for every q4_K
// matrix with a multiple of 8 rows on AVX2 CPUs), q5_K and q6_K through the
// AVX2 ggml_vec_dot_q5_K_q8_K / ggml_vec_dot_q6_K_q8_K. Checked against the
// library itself by TestKQuantMatchesLlamaCpp (testdata/kquant_ref.bin).

package tensor

import (
	"encoding/binary"
	"math"
)

// QKK is the number of values in a K-quant super-block (ggml's QK_K).
const QKK = 256

// Encoded sizes of one super-block (ggml's block_q4_K, block_q5_K,
// block_q6_K).
const (
	q4KBlockBytes = 144 // f16 d, f16 dmin, u8 scales[12], u8 qs[128]
	q5KBlockBytes = 176 // f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]
	q6KBlockBytes = 210 // u8 ql[128], u8 qh[64], i8 scales[16], f16 d
)

// KQuant reports whether d is one of ggml's K-quant types, whose dot
// products take activations quantized to q8_K.
func (d DType) KQuant() bool { return d == Q4_K || d == Q5_K || d == Q6_K }

// kBlockBytes is the encoded size of one super-block of K-quant type d.
func kBlockBytes(d DType) int {
	switch d {
	case Q4_K:
		return q4KBlockBytes
	case Q5_K:
		return q5KBlockBytes
	}
	return q6KBlockBytes
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a q4_K/q5_K block.
func scaleMinK4(j int, q []byte) (byte, byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// kScalesMins unpacks the eight scales and eight mins of a q4_K/q5_K
// block.
func kScalesMins(q []byte) (sc, mn [8]int32) {
	for j := 0; j < 8; j++ {
		s, m := scaleMinK4(j, q)
		sc[j], mn[j] = int32(s), int32(m)
	}
	return
}

// kValue returns value i (0..255) of a q4_K/q5_K block as its unsigned
// quant (0..15 or 0..31).
func kValue4(blk []byte, i int) int32 {
	qs := blk[16:144]
	j, l := i/64, i%64
	b := qs[32*j+l%32]
	if l < 32 {
		return int32(b & 0xF)
	}
	return int32(b >> 4)
}

func kValue5(blk []byte, i int) int32 {
	qh, qs := blk[16:48], blk[48:176]
	j, l := i/64, i%64
	b := qs[32*j+l%32]
	bit := uint(2 * j)
	var v int32
	if l < 32 {
		v = int32(b & 0xF)
	} else {
		v = int32(b >> 4)
		bit++
	}
	return v | int32(qh[l%32]>>bit&1)<<4
}

// kValue6 returns value i of a q6_K block as its unsigned quant (0..63).
func kValue6(blk []byte, i int) int32 {
	ql, qh := blk[0:128], blk[128:192]
	n, p := i/128, i%128
	c, l := p/32, p%32
	b := ql[64*n+32*(c&1)+l]
	lo := b & 0xF
	if c >= 2 {
		lo = b >> 4
	}
	hi := qh[32*n+l] >> (2 * uint(c)) & 3
	return int32(lo | hi<<4)
}

// dequantizeK decodes nb super-blocks of K-quant type t as ggml's
// dequantize_row_q4_K / q5_K / q6_K do (same float operations: llama.cpp
// reads its embedding rows this way).
func dequantizeK(t DType, src []byte, dst []float32) {
	bb := kBlockBytes(t)
	for b := 0; b < len(dst)/QKK; b++ {
		blk, y := src[b*bb:(b+1)*bb], dst[b*QKK:(b+1)*QKK]
		if t == Q6_K {
			d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
			sc := blk[192:208]
			for i := range y {
				y[i] = float32(d*float32(int8(sc[i/16]))) * float32(kValue6(blk, i)-32)
			}
			continue
		}
		d := F16ToF32(binary.LittleEndian.Uint16(blk))
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		sc, mn := kScalesMins(blk[4:16])
		for i := range y {
			q := kValue4(blk, i)
			if t == Q5_K {
				q = kValue5(blk, i)
			}
			d1, m1 := d*float32(sc[i/32]), dmin*float32(mn[i/32])
			y[i] = float32(d1*float32(q)) - m1
		}
	}
}

// quantizeK encodes src (a multiple of 256 values) as K-quant type t. It
// is a plain min/max quantizer (not llama-quantize's error search): files
// written with it are valid and llama.cpp reads them identically, which is
// all random-weight test models need.
func quantizeK(t DType, src []float32, dst []byte) {
	bb := kBlockBytes(t)
	for b := 0; b < len(src)/QKK; b++ {
		x, blk := src[b*QKK:(b+1)*QKK], dst[b*bb:(b+1)*bb]
		if t == Q6_K {
			quantizeQ6K(x, blk)
		} else {
			quantizeQ45K(t, x, blk)
		}
	}
}

func quantizeQ45K(t DType, x []float32, blk []byte) {
	qmax := float32(15)
	if t == Q5_K {
		qmax = 31
	}
	var scale, minv [8]float32 // per 32 values: step and -min (>= 0)
	var maxScale, maxMin float32
	for s := 0; s < 8; s++ {
		lo, hi := float32(0), x[32*s]
		for _, v := range x[32*s : 32*s+32] {
			lo, hi = min(lo, v), max(hi, v)
		}
		scale[s], minv[s] = (hi-lo)/qmax, -lo
		maxScale, maxMin = max(maxScale, scale[s]), max(maxMin, minv[s])
	}
	d, dmin := F16ToF32(F32ToF16(maxScale/63)), F16ToF32(F32ToF16(maxMin/63))
	var sc, mn [8]byte
	for s := 0; s < 8; s++ {
		if d > 0 {
			sc[s] = byte(min(63, roundAway(scale[s]/d)))
		}
		if dmin > 0 {
			mn[s] = byte(min(63, roundAway(minv[s]/dmin)))
		}
	}
	binary.LittleEndian.PutUint16(blk, F32ToF16(d))
	binary.LittleEndian.PutUint16(blk[2:], F32ToF16(dmin))
	q := blk[4:16]
	for j := 0; j < 4; j++ {
		q[j] = sc[j] | (sc[j+4]>>4)<<6
		q[j+4] = mn[j] | (mn[j+4]>>4)<<6
		q[j+8] = sc[j+4]&0xF | (mn[j+4]&0xF)<<4
	}
	var qs, qh []byte
	if t == Q5_K {
		qh, qs = blk[16:48], blk[48:176]
		clear(qh)
	} else {
		qs = blk[16:144]
	}
	for i, v := range x {
		s := i / 32
		var l int32
		if step := d * float32(sc[s]); step > 0 {
			l = int32(max(0, min(qmax, roundAway((v+dmin*float32(mn[s]))/step))))
		}
		j, p := i/64, i%64
		if p < 32 {
			qs[32*j+p] = qs[32*j+p]&0xF0 | byte(l&0xF)
		} else {
			qs[32*j+p-32] = qs[32*j+p-32]&0x0F | byte(l&0xF)<<4
		}
		if t == Q5_K {
			bit := uint(2 * j)
			if p >= 32 {
				bit++
			}
			qh[p%32] |= byte(l>>4&1) << bit
		}
	}
}

func quantizeQ6K(x []float32, blk []byte) {
	var scale [16]float32
	var amax float32
	for s := 0; s < 16; s++ {
		var m float32
		for _, v := range x[16*s : 16*s+16] {
			m = max(m, abs32(v))
		}
		scale[s] = m / 31
		amax = max(amax, scale[s])
	}
	d := F16ToF32(F32ToF16(amax / 127))
	sc := blk[192:208]
	for s := range scale {
		if d > 0 {
			sc[s] = byte(int8(min(127, roundAway(scale[s]/d))))
		} else {
			sc[s] = 0
		}
	}
	binary.LittleEndian.PutUint16(blk[208:], F32ToF16(d))
	ql, qh := blk[0:128], blk[128:192]
	clear(ql)
	clear(qh)
	for i, v := range x {
		var l int32
		if step := d * float32(int8(sc[i/16])); step > 0 {
			l = int32(max(-32, min(31, roundAway(v/step))))
		}
		u := byte(l + 32)
		n, p := i/128, i%128
		c, k := p/32, p%32
		o := 64*n + 32*(c&1) + k
		if c < 2 {
			ql[o] |= u & 0xF
		} else {
			ql[o] |= (u & 0xF) << 4
		}
		qh[32*n+k] |= (u >> 4) << (2 * uint(c))
	}
}

// ActQ8K is a batch of activation rows quantized to ggml's q8_K: per
// 256-value block a float32 scale, 256 int8 values and 16 sums of 16 (and
// the 8 sums of 32 the packed q4_K kernel broadcasts).
type ActQ8K struct {
	Q     []int8
	D     []float32
	BSums []int16
	S     []int32
}

// fillS sets a.S from a.BSums.
func (a *ActQ8K) fillS() {
	for i := range a.S {
		a.S[i] = int32(a.BSums[2*i]) + int32(a.BSums[2*i+1])
	}
}

// quantizeActQ8K quantizes one row (len(x) a multiple of 256) into q, d
// (len(x)/256) and bsums (len(x)/16), as quantize_row_q8_K_ref: the value
// of largest magnitude (the first such) maps to -127 or 127 by the scale
// -127/max, values round to nearest even (ggml's nearest_int), d = 1/iscale.
func quantizeActQ8K(x []float32, q []int8, d []float32, bsums []int16) {
	if !quantizeActQ8KAsm(x, q, d, bsums) {
		quantizeActQ8KGeneric(x, q, d, bsums)
	}
}

func quantizeActQ8KGeneric(x []float32, q []int8, d []float32, bsums []int16) {
	for b := 0; b < len(x)/QKK; b++ {
		xb, qb := x[b*QKK:(b+1)*QKK], q[b*QKK:(b+1)*QKK]
		var amax, mx float32
		for _, v := range xb {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			d[b] = 0
			clear(qb)
			clear(bsums[16*b : 16*b+16])
			continue
		}
		iscale := -127 / mx
		for j, v := range xb {
			qb[j] = int8(min(127, nearestInt(iscale*v)))
		}
		for j := 0; j < 16; j++ {
			var s int16
			for _, v := range qb[16*j : 16*j+16] {
				s += int16(v)
			}
			bsums[16*b+j] = s
		}
		d[b] = 1 / iscale
	}
}

// nearestInt is ggml's nearest_int: round to nearest, ties to even.
func nearestInt(f float32) int32 { return int32(math.RoundToEven(float64(f))) }
