package tensor

import "math"

// llama.cpp calls the C library's expf, whose results are not always
// correctly rounded, so rounding a float64 exp in Go differs from it now
// and then. This is a port of glibc 2.36's expf (from Arm's
// optimized-routines) as selected on x86-64 CPUs with FMA: every
// operation the compiler fused there is fused here too. ExpfRow is the
// same function on a whole row, four lanes at a time on AVX2.

// expf2Tab is glibc's __exp2f_data.tab: bits(2^(i/32)) - (i<<52)/32.
var expf2Tab = [32]uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}

const (
	expfInvLn2N = 0x1.71547652b82fep+5 // 32/ln2
	expfShift   = 0x1.8p+52
	expfC0      = 0x1.c6af84b912394p-20
	expfC1      = 0x1.ebfce50fac4f3p-13
	expfC2      = 0x1.62e42ff0c52d6p-6
)

// Expf is glibc's expf (__expf_fma).
func Expf(x float32) float32 {
	ix := math.Float32bits(x)
	if (ix>>20)&0x7ff > 0x42a { // |x| >= 88 (or inf / nan)
		switch {
		case ix == 0xff800000: // -inf
			return 0
		case (ix>>20)&0x7ff > 0x7f7: // +inf or nan
			return x + x
		case x > 0x1.62e42ep6: // overflow
			return float32(math.Inf(1))
		case x < -0x1.9fe368p6: // underflow to zero
			return 0
		case x < -0x1.9d1d9ep6: // may underflow: glibc returns (0x1.4p-75f)^2
			return 0x1p-149
		}
	}
	xd := float64(x)
	kd := math.FMA(expfInvLn2N, xd, expfShift)
	ki := math.Float64bits(kd)
	kd -= expfShift
	r := math.FMA(expfInvLn2N, xd, -kd)
	z := math.FMA(expfC0, r, expfC1)
	r2 := r * r
	y := math.FMA(r, expfC2, 1)
	y = math.FMA(z, r2, y)
	s := math.Float64frombits(expf2Tab[ki%32] + ki<<47)
	return float32(y * s)
}
