package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Dequantize decodes len(dst) values of the ggml block types that the
// engine does not compute on directly (q4_1, q5_0, q5_1, q4_K, q5_K,
// q6_K) into dst, following ggml's dequantize_row_* functions. The model
// loader uses it to convert such tensors (common in Q4_K_M-style files) to
// a type it computes on.
func Dequantize(t GGMLType, src []byte, dst []float32) error {
	bs, ts := t.BlockSize(), t.TypeSize()
	if !t.Known() || uint64(len(dst))%bs != 0 {
		return fmt.Errorf("dequantize %s: %d values", t, len(dst))
	}
	nb := uint64(len(dst)) / bs
	if uint64(len(src)) < nb*ts {
		return fmt.Errorf("dequantize %s: %d bytes for %d values", t, len(src), len(dst))
	}
	for b := uint64(0); b < nb; b++ {
		blk, y := src[b*ts:(b+1)*ts], dst[b*bs:(b+1)*bs]
		switch t {
		case Q4_1:
			d, m := half(blk), half(blk[2:])
			for j := 0; j < 16; j++ {
				q := blk[4+j]
				y[j] = float32(q&0xF)*d + m
				y[j+16] = float32(q>>4)*d + m
			}
		case Q5_0, Q5_1:
			d, m, off := half(blk), float32(0), 2
			if t == Q5_1 {
				m, off = half(blk[2:]), 4
			}
			qh := binary.LittleEndian.Uint32(blk[off:])
			qs := blk[off+4:]
			for j := 0; j < 16; j++ {
				xh0 := byte((qh>>j)<<4) & 0x10
				xh1 := byte(qh>>(j+12)) & 0x10
				x0, x1 := int32(qs[j]&0x0F|xh0), int32(qs[j]>>4|xh1)
				if t == Q5_0 {
					y[j], y[j+16] = float32(x0-16)*d, float32(x1-16)*d
				} else {
					y[j], y[j+16] = float32(x0)*d+m, float32(x1)*d+m
				}
			}
		case Q4_K, Q5_K:
			d, dmin := half(blk), half(blk[2:])
			scales := blk[4:16]
			var qh, ql []byte
			if t == Q5_K {
				qh, ql = blk[16:48], blk[48:176]
			} else {
				ql = blk[16:144]
			}
			var u1, u2 byte = 1, 2
			for j, is := 0, 0; j < 256; j, is = j+64, is+2 {
				sc, m := scaleMinK4(is, scales)
				d1, m1 := d*float32(sc), dmin*float32(m)
				sc, m = scaleMinK4(is+1, scales)
				d2, m2 := d*float32(sc), dmin*float32(m)
				q := ql[j/2 : j/2+32]
				for l := 0; l < 32; l++ {
					lo, hi := float32(q[l]&0xF), float32(q[l]>>4)
					if t == Q5_K {
						if qh[l]&u1 != 0 {
							lo += 16
						}
						if qh[l]&u2 != 0 {
							hi += 16
						}
					}
					y[j+l] = d1*lo - m1
					y[j+32+l] = d2*hi - m2
				}
				u1, u2 = u1<<2, u2<<2
			}
		case Q6_K:
			ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
			d := half(blk[208:])
			for n := 0; n < 2; n++ {
				ql, qh, sc, yy := ql[64*n:], qh[32*n:], sc[8*n:], y[128*n:]
				for l := 0; l < 32; l++ {
					is := l / 16
					q1 := int32(ql[l]&0xF|(qh[l]>>0&3)<<4) - 32
					q2 := int32(ql[l+32]&0xF|(qh[l]>>2&3)<<4) - 32
					q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
					q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
					yy[l] = d * float32(int8(sc[is])) * float32(q1)
					yy[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
					yy[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
					yy[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
				}
			}
		default:
			return fmt.Errorf("dequantize: type %s is not supported", t)
		}
	}
	return nil
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a q4_K/q5_K block.
func scaleMinK4(j int, q []byte) (byte, byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xF | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// half decodes a little-endian IEEE half.
func half(b []byte) float32 {
	h := binary.LittleEndian.Uint16(b)
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1F
	mant := uint32(h) & 0x3FF
	switch {
	case exp == 0x1F:
		return math.Float32frombits(sign | 0x7F800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	return math.Float32frombits(sign | math.Float32bits(float32(mant)*(1.0/(1<<24))))
}
