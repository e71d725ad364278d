package tensor

import (
	"encoding/binary"
	"math"
)

// q4BlockInt is the exact integer dot product of one q4_0 block with 32
// activation values.
func q4BlockInt(blk []byte, x []int8) int32 {
	var isum int32
	for j := 0; j < QK/2; j++ {
		q := blk[2+j]
		isum += (int32(q&0xF) - 8) * int32(x[j])
		isum += (int32(q>>4) - 8) * int32(x[j+QK/2])
	}
	return isum
}

// fmaChain is acc + isum*scale with one rounding (the product is exact in
// float64; the final conversion may round twice in rare cases).
func fmaChain(isum int32, scale, acc float32) float32 {
	return float32(math.FMA(float64(isum), float64(scale), float64(acc)))
}

func dotQ4ChainGeneric(w []byte, xq []int8, ds []float32) float32 {
	var acc float32
	for b := range ds {
		blk := w[b*q4BlockBytes : (b+1)*q4BlockBytes]
		d := F16ToF32(binary.LittleEndian.Uint16(blk)) * ds[b]
		acc = fmaChain(q4BlockInt(blk, xq[b*QK:(b+1)*QK]), d, acc)
	}
	return acc
}

func dotQ4Tok4Generic(w []byte, xq []int8, dsT []float32, out *[4]float32) {
	nb := len(dsT) / 4
	ds := make([]float32, nb)
	for t := range out {
		for b := range ds {
			ds[b] = dsT[4*b+t]
		}
		out[t] = dotQ4ChainGeneric(w, xq[t*nb*QK:(t+1)*nb*QK], ds)
	}
}
