package tensor

import (
	"encoding/binary"
	"math"
)

// q4x8GroupBytes is one block column of eight q4_0 rows in the packed
// layout: the rows' eight f16 scales, then their quants interleaved four
// bytes at a time — chunk k (quant bytes 4k..4k+3 of a row: values 4k..4k+3
// in the low nibbles, 16+4k..16+4k+3 in the high ones) of rows 0..7 — so one
// 32-byte load holds the same four values of all eight rows and an
// integer multiply-add against four broadcast activation bytes leaves each
// row's partial sum in its own 32-bit lane: no horizontal sums, and one
// sequential stream per eight rows.
const q4x8GroupBytes = 8 * q4BlockBytes

// packQ4x8 repacks a q4_0 matrix (rows a multiple of 8) into groups of
// eight rows: group g, block b at (g*nb+b)*q4x8GroupBytes. It writes into
// out (of that size) or, when out is nil, a new slice.
func packQ4x8(out, data []byte, rows, cols int) []byte {
	nb := cols / QK
	rb := nb * q4BlockBytes
	if out == nil {
		out = make([]byte, rows/8*nb*q4x8GroupBytes)
	}
	for g := 0; g < rows/8; g++ {
		for b := 0; b < nb; b++ {
			dst := out[(g*nb+b)*q4x8GroupBytes : (g*nb+b+1)*q4x8GroupBytes]
			for r := 0; r < 8; r++ {
				src := data[(g*8+r)*rb+b*q4BlockBytes:]
				dst[2*r], dst[2*r+1] = src[0], src[1]
				// Four-byte moves, not copy(): copy calls memmove for each
				// and made loading a 1B model take two seconds.
				for k := 0; k < 4; k++ {
					binary.LittleEndian.PutUint32(dst[16+32*k+4*r:], binary.LittleEndian.Uint32(src[2+4*k:]))
				}
			}
		}
	}
	return out
}

// q4x8Block returns the int dot product of row r's block at grp (a packed
// group, see packQ4x8) with 32 activation values.
func q4x8Block(grp []byte, r int, x []int8) int32 {
	var isum int32
	for k := 0; k < 4; k++ {
		for j := 0; j < 4; j++ {
			q := grp[16+32*k+4*r+j]
			isum += (int32(q&0xF) - 8) * int32(x[4*k+j])
			isum += (int32(q>>4) - 8) * int32(x[16+4*k+j])
		}
	}
	return isum
}

// q4x8MaxTok is the most tokens one q4x8 call computes (the AVX2 kernel
// does up to four).
const q4x8MaxTok = 8

// q4x8Generic computes the eight rows of a packed group (nb blocks at w)
// against ntok activation rows (xq rows of nb*32 values; xds rows of nb
// pairs: the block scale, then 8*sum of the block's values as int32 bits),
// out[c*8+r], with llama.cpp's repacked-q4_0 rounding.
func q4x8Generic(w []byte, nb int, xq []int8, xds []float32, ntok int, out *[8 * q4x8MaxTok]float32) {
	for c := 0; c < ntok; c++ {
		x, d := xq[c*nb*QK:(c+1)*nb*QK], xds[2*c*nb:2*(c+1)*nb]
		for r := 0; r < 8; r++ {
			var acc float32
			for b := 0; b < nb; b++ {
				grp := w[b*q4x8GroupBytes : (b+1)*q4x8GroupBytes]
				s := F16ToF32(binary.LittleEndian.Uint16(grp[2*r:])) * d[2*b]
				acc = fmaChain(q4x8Block(grp, r, x[b*QK:(b+1)*QK]), s, acc)
			}
			out[c*8+r] = acc
		}
	}
}

// fillQ4Sums sets xds (rows of nb pairs, see q4x8Generic) from quantized
// activation rows.
func fillQ4Sums(xds []float32, xq []int8, xd []float32) {
	for i, d := range xd {
		var s int32
		for _, v := range xq[i*QK : (i+1)*QK] {
			s += int32(v)
		}
		xds[2*i] = d
		xds[2*i+1] = math.Float32frombits(uint32(8 * s))
	}
}
