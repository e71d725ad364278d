package tensor

import "golang.org/x/sys/cpu"

// hasFA512 selects the 512-bit tile kernels (fablock512_amd64.s): the
// same chains as the AVX2 ones, twice the columns per instruction (on a
// full-width AVX-512 core, as Zen 5, about twice the tile rate).
var hasFA512 = hasAVX2 && cpu.X86.HasAVX512F

//go:noescape
func faKQ6AVX2(out, kt, q *float32, dk int, scale float32)

//go:noescape
func faVAcc6AVX2(acc, v, p *float32, dv int)

//go:noescape
func faKQ6AVX512(out, kt, q *float32, dk int, scale float32)

//go:noescape
func faVAcc6AVX512(acc, v, p *float32, dv int)

func tileKQBlock(out, kt, q []float32, dk int, scale float32) {
	switch {
	case !hasAVX2 || dk == 0:
		tileKQBlockGeneric(out, kt, q, dk, scale)
	case hasFA512:
		faKQ6AVX512(&out[0], &kt[0], &q[0], dk, scale)
	default:
		faKQ6AVX2(&out[0], &kt[0], &q[0], dk, scale)
	}
}

func tileVAccBlock(acc, v, p []float32, dv int) {
	switch {
	case !hasAVX2 || dv == 0 || dv%16 != 0:
		tileVAccBlockGeneric(acc, v, p, dv)
	case hasFA512 && dv%64 == 0:
		faVAcc6AVX512(&acc[0], &v[0], &p[0], dv)
	default:
		faVAcc6AVX2(&acc[0], &v[0], &p[0], dv)
	}
}

//go:noescape
func faMax64AVX2(x *float32) float32

//go:noescape
func faSub64AVX2(x *float32, m float32)

func tileMax(x []float32) float32 {
	if !hasAVX2 {
		return tileMaxGeneric(x)
	}
	return faMax64AVX2(&x[0])
}

func tileSub(x []float32, m float32) {
	if !hasAVX2 {
		tileSubGeneric(x, m)
		return
	}
	faSub64AVX2(&x[0], m)
}

//go:noescape
func faSum64AVX2(x *float32, lanes int) float64

func tileSum(x []float32, lanes int) float64 {
	if !hasAVX2 || (lanes != 8 && lanes != 16) {
		return tileSumGeneric(x, lanes)
	}
	return faSum64AVX2(&x[0], lanes)
}
