package tensor

import (
	"encoding/binary"
	"math"
)

// q8TileBlockBytes is one block of a q8 activation tile: the quants of
// eight token slots (8 x 32 bytes), their int32 corrections (8 x 8 lanes:
// -128 times each group of four quants) and their scales (8 x f32).
const q8TileBlockBytes = 8*QK + 8*32 + 8*4

// q8TileTokens is how many tokens one tile holds.
const q8TileTokens = 8

// fillQ8Tile lays out up to eight quantized activation rows (xq rows of
// nb*32 values, xd rows of nb scales) as a tile: block b at
// b*q8TileBlockBytes. Slots past ntok get zero scales (the kernel
// multiplies them but never uses the products).
func fillQ8Tile(tile []byte, xq []int8, xd []float32, nb, ntok int) {
	for b := 0; b < nb; b++ {
		blk := tile[b*q8TileBlockBytes : (b+1)*q8TileBlockBytes]
		for c := 0; c < ntok; c++ {
			x := xq[(c*nb+b)*QK : (c*nb+b+1)*QK]
			q := blk[32*c : 32*c+32]
			for j, v := range x {
				q[j] = byte(v)
			}
			for l := 0; l < 8; l++ {
				s := int32(x[4*l]) + int32(x[4*l+1]) + int32(x[4*l+2]) + int32(x[4*l+3])
				binary.LittleEndian.PutUint32(blk[256+32*c+4*l:], uint32(-128*s))
			}
			binary.LittleEndian.PutUint32(blk[512+4*c:], math.Float32bits(xd[c*nb+b]))
		}
		clear(blk[512+4*ntok : 512+4*q8TileTokens])
	}
}
