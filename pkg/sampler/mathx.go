package sampler

import "math"

// sanitizeArgmax replaces NaN logits by -Inf (a NaN would break the total
// order selection relies on) and returns the first index of the maximum,
// in one pass over the vocabulary.
func sanitizeArgmax(x []float32) int {
	negInf := float32(math.Inf(-1))
	best, bv := 0, negInf
	for i, v := range x {
		if v != v {
			x[i] = negInf
			continue
		}
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}

// expScale sets dst[i] = exp((x[i]-m)*scale), or 0 where the argument is
// below -87 (under float32's normal range; masked -Inf logits land there),
// and returns the sum in float64. The bulk runs in the AVX2 kernel when the
// CPU has one, the rest here.
func expScale(dst, x []float32, m, scale float32) float64 {
	n, z := expBlock(dst, x, m, scale)
	for i := n; i < len(x); i++ {
		a := (x[i] - m) * scale
		e := float32(0)
		if a >= -87 {
			e = float32(math.Exp(float64(a)))
		}
		dst[i] = e
		z += float64(e)
	}
	return z
}
