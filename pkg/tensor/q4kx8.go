// exactness: see kquant.go.

package tensor

import "encoding/binary"

// q4Kx8GroupBytes is one super-block column of eight q4_K rows in the
// packed layout (llama.cpp repacks q4_K eight rows at a time too, for the
// same reason): the rows' f16 d[8] and dmin[8]; their scales and mins,
// unpacked from 6 bits, as [sub-block][row] bytes; then the quants
// interleaved four bytes at a time — for chunk j (0..3) and k (0..7), quant
// bytes 32j+4k..+3 of rows 0..7 (values 64j+4k.. in the low nibbles,
// 64j+32+4k.. in the high ones). One 32-byte load holds the same four
// values of all eight rows, so an integer multiply-add against four
// broadcast activation bytes leaves each row's partial sum in its own lane:
// no horizontal sums, no per-row scale unpacking.
const q4Kx8GroupBytes = 16 + 16 + 64 + 64 + 1024

// packQ4Kx8 repacks a q4_K matrix (rows a multiple of 8) into groups of
// eight rows: group g, super-block b at (g*nb+b)*q4Kx8GroupBytes. It
// writes into out (of that size) or, when out is nil, a new slice.
func packQ4Kx8(out, data []byte, rows, cols int) []byte {
	nb := cols / QKK
	rb := nb * q4KBlockBytes
	if out == nil {
		out = make([]byte, rows/8*nb*q4Kx8GroupBytes)
	}
	for g := 0; g < rows/8; g++ {
		for b := 0; b < nb; b++ {
			dst := out[(g*nb+b)*q4Kx8GroupBytes : (g*nb+b+1)*q4Kx8GroupBytes]
			for r := 0; r < 8; r++ {
				src := data[(g*8+r)*rb+b*q4KBlockBytes:]
				dst[2*r], dst[2*r+1] = src[0], src[1]
				dst[16+2*r], dst[17+2*r] = src[2], src[3]
				sc, mn := kScalesMins(src[4:16])
				for s := 0; s < 8; s++ {
					dst[32+8*s+r], dst[96+8*s+r] = byte(sc[s]), byte(mn[s])
				}
				for c := 0; c < 32; c++ {
					binary.LittleEndian.PutUint32(dst[160+32*c+4*r:], binary.LittleEndian.Uint32(src[16+4*c:]))
				}
			}
		}
	}
	return out
}

// q4Kx8Generic is the portable q4Kx8Rows of one group: the eight rows of a packed group (nb
// super-blocks at w) against one q8_K activation row, with the gemv
// (gemm false) or gemm rounding of dotQ4KGeneric / dotQ4KGemmGeneric.
// xs holds the activation's 32-value sums, 8 per super-block.
func q4Kx8Generic(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out *[8]float32) {
	var acc, accMin [8]float32
	for b := 0; b < nb; b++ {
		grp := w[b*q4Kx8GroupBytes : (b+1)*q4Kx8GroupBytes]
		q8 := xq[b*QKK : (b+1)*QKK]
		for r := 0; r < 8; r++ {
			ds := F16ToF32(binary.LittleEndian.Uint16(grp[2*r:])) * xd[b]
			dm := F16ToF32(binary.LittleEndian.Uint16(grp[16+2*r:])) * xd[b]
			var isum, imin int32
			for j := 0; j < 4; j++ {
				for h := 0; h < 2; h++ {
					s := 2*j + h
					var dot int32
					for k := 0; k < 8; k++ {
						for i := 0; i < 4; i++ {
							q := grp[160+32*(8*j+k)+4*r+i]
							if h == 1 {
								q >>= 4
							}
							dot += int32(q&0xF) * int32(q8[64*j+32*h+4*k+i])
						}
					}
					isum += int32(grp[32+8*s+r]) * dot
					imin += int32(grp[96+8*s+r]) * xs[8*b+s]
				}
				if gemm {
					acc[r] = FMA32(float32(isum), ds, acc[r])
					accMin[r] = FMA32(float32(imin), dm, accMin[r])
					isum, imin = 0, 0
				}
			}
			if !gemm {
				acc[r] = FMA32(float32(isum), ds, acc[r])
				accMin[r] = FMA32(float32(imin), dm, accMin[r])
			}
		}
	}
	for r := range out {
		out[r] = acc[r] - accMin[r]
	}
}

// q4Kx8RowsGeneric is q4Kx8Generic on len(out)/8 consecutive groups.
func q4Kx8RowsGeneric(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out []float32) {
	gb := nb * q4Kx8GroupBytes
	var res [8]float32
	for g := 0; g < len(out)/8; g++ {
		q4Kx8Generic(w[g*gb:(g+1)*gb], nb, xq, xd, xs, gemm, &res)
		copy(out[8*g:8*g+8], res[:])
	}
}

// q4Kx8x4Generic is the portable q4Kx8x4: q4Kx8Generic on each of four
// consecutive tokens (bs: their 16-value sums, from which the 32-value
// sums q4Kx8Generic takes are formed).
func q4Kx8x4Generic(w []byte, nb int, xq []int8, xd []float32, bs []int16, gemm bool, out *[32]float32) {
	xs := make([]int32, 8*nb)
	var res [8]float32
	for t := 0; t < 4; t++ {
		for i := range xs {
			xs[i] = int32(bs[16*t*nb+2*i]) + int32(bs[16*t*nb+2*i+1])
		}
		q4Kx8Generic(w, nb, xq[t*nb*QKK:], xd[t*nb:], xs, gemm, &res)
		copy(out[8*t:8*t+8], res[:])
	}
}
