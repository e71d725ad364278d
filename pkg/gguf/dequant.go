package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Dequantize decodes len(dst) values of the ggml block types that the
// engine does not compute on directly (q4_1, q5_0, q5_1, q2_K, q3_K,
// iq4_nl, iq4_xs; also q4_K, q5_K, q6_K) into dst, following ggml's
// dequantize_row_* functions. The model loader uses it to convert such
// tensors (in Q2_K/Q3_K_M/IQ4_XS-style files) to a type it computes on.
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
		case Q2_K:
			d, dmin := half(blk[80:]), half(blk[82:])
			scales, q := blk[0:16], blk[16:80]
			for n, is := 0, 0; n < 2; n++ {
				qq, yy := q[32*n:], y[128*n:]
				for j := 0; j < 4; j++ {
					for h := 0; h < 2; h++ {
						sc := scales[is]
						is++
						dl, ml := d*float32(sc&0xF), dmin*float32(sc>>4)
						for l := 0; l < 16; l++ {
							yy[32*j+16*h+l] = float32(dl*float32(qq[16*h+l]>>(2*j)&3)) - ml
						}
					}
				}
			}
		case Q3_K:
			hm, q := blk[0:32], blk[32:96]
			a0, a1 := binary.LittleEndian.Uint32(blk[96:]), binary.LittleEndian.Uint32(blk[100:])
			tmp := binary.LittleEndian.Uint32(blk[104:])
			var sc [16]byte
			for i, v := range [4]uint32{
				a0&0x0f0f0f0f | (tmp>>0&0x03030303)<<4, a1&0x0f0f0f0f | (tmp>>2&0x03030303)<<4,
				a0>>4&0x0f0f0f0f | (tmp>>4&0x03030303)<<4, a1>>4&0x0f0f0f0f | (tmp>>6&0x03030303)<<4,
			} {
				binary.LittleEndian.PutUint32(sc[4*i:], v)
			}
			dAll := half(blk[108:])
			m, is := byte(1), 0
			for n := 0; n < 2; n++ {
				qq, yy := q[32*n:], y[128*n:]
				for j := 0; j < 4; j++ {
					for h := 0; h < 2; h++ {
						dl := dAll * float32(int32(int8(sc[is]))-32)
						is++
						for l := 0; l < 16; l++ {
							v := int32(qq[16*h+l] >> (2 * j) & 3)
							if hm[16*h+l]&m == 0 {
								v -= 4
							}
							yy[32*j+16*h+l] = dl * float32(v)
						}
					}
					m <<= 1
				}
			}
		case IQ4_NL:
			d := half(blk)
			for j := 0; j < 16; j++ {
				y[j], y[j+16] = d*float32(kvaluesIQ4NL[blk[2+j]&0xF]), d*float32(kvaluesIQ4NL[blk[2+j]>>4])
			}
		case IQ4_XS:
			d := half(blk)
			sh := binary.LittleEndian.Uint16(blk[2:])
			sl, qs := blk[4:8], blk[8:136]
			for ib := 0; ib < 8; ib++ {
				ls := int32(sl[ib/2]>>(4*(ib%2))&0xF) | int32(sh>>(2*ib)&3)<<4
				dl := d * float32(ls-32)
				q, yy := qs[16*ib:], y[32*ib:]
				for j := 0; j < 16; j++ {
					yy[j], yy[j+16] = dl*float32(kvaluesIQ4NL[q[j]&0xF]), dl*float32(kvaluesIQ4NL[q[j]>>4])
				}
			}
		default:
			return fmt.Errorf("dequantize: type %s is not supported", t)
		}
	}
	return nil
}

// kvaluesIQ4NL is ggml's non-linear 4-bit grid of iq4_nl / iq4_xs.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

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
