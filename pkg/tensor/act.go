package tensor

import "math"

// QuantizeActQ8 quantizes one activation row x (len a multiple of 32) to
// q8_0 the way ggml's AVX2 quantize_row_q8_0 does (scale 127/amax, round to
// nearest even, block scale rounded to f16), storing values in qs and the
// f16-rounded block scales as float32 in ds (len(x)/32).
func QuantizeActQ8(x []float32, qs []int8, ds []float32) {
	if quantizeActQ8(x, qs, ds) {
		return
	}
	quantizeActQ8Generic(x, qs, ds)
}

func quantizeActQ8Generic(x []float32, qs []int8, ds []float32) {
	nb := len(x) / QK
	qs = qs[:nb*QK]
	ds = ds[:nb]
	for b := 0; b < nb; b++ {
		blk := x[b*QK : (b+1)*QK : (b+1)*QK]
		var amax float32
		for _, v := range blk {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		ds[b] = F16ToF32(F32ToF16(d))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := qs[b*QK : (b+1)*QK : (b+1)*QK]
		for j, v := range blk {
			q[j] = int8(math.RoundToEven(float64(v * id)))
		}
	}
}
