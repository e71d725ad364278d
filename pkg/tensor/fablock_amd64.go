package tensor

//go:noescape
func faKQ6AVX2(out, kt, q *float32, dk int, scale float32)

//go:noescape
func faVAcc6AVX2(acc, v, p *float32, dv int)

func tileKQBlock(out, kt, q []float32, dk int, scale float32) {
	if !hasAVX2 || dk == 0 {
		tileKQBlockGeneric(out, kt, q, dk, scale)
		return
	}
	faKQ6AVX2(&out[0], &kt[0], &q[0], dk, scale)
}

func tileVAccBlock(acc, v, p []float32, dv int) {
	if !hasAVX2 || dv == 0 || dv%16 != 0 {
		tileVAccBlockGeneric(acc, v, p, dv)
		return
	}
	faVAcc6AVX2(&acc[0], &v[0], &p[0], dv)
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
