package model

import (
	"math"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// llama.cpp calls the C library's sincosf (and expf: tensor.Expf), whose
// results are not always correctly rounded, so rounding a float64 sin in
// Go differs from them now and then. These are ports of glibc 2.36's
// implementations (from Arm's optimized-routines) as selected on x86-64
// CPUs with FMA: every operation the compiler fused there is fused here too.

// sincosfTab is glibc 2.36's __sincosf_table in its in-memory order:
// sign[4], hpi_inv (2/pi * 2^24), hpi, c0, c1, s1, c2, s2, c3, s3, c4.
// The second entry negates the cosine polynomial.
var sincosfTab = [2][14]float64{
	{1, -1, -1, 1, 0x1.45f306dc9c883p+23, 0x1.921fb54442d18p+0, 1, -0x1.ffffffd0c621cp-2,
		-0x1.555545995a603p-3, 0x1.55553e1068f19p-5, 0x1.1107605230bc4p-7, -0x1.6c087e89a359dp-10,
		-0x1.994eb3774cf24p-13, 0x1.99343027bf8c3p-16},
	{1, -1, -1, 1, 0x1.45f306dc9c883p+23, 0x1.921fb54442d18p+0, -1, 0x1.ffffffd0c621cp-2,
		-0x1.555545995a603p-3, -0x1.55553e1068f19p-5, 0x1.1107605230bc4p-7, 0x1.6c087e89a359dp-10,
		-0x1.994eb3774cf24p-13, -0x1.99343027bf8c3p-16},
}

const (
	scHpiInv = 4
	scHpi    = 5
	scC0     = 6
	scC1     = 7
	scS1     = 8
	scC2     = 9
	scS2     = 10
	scC3     = 11
	scS3     = 12
	scC4     = 13
)

// invPio4 is 4/pi to 192 bits, 8 new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// sincosf is glibc's sincosf (__sincosf_fma).
func sincosf(y float32) (sin, cos float32) {
	iy := math.Float32bits(y)
	top := (iy >> 20) & 0x7ff
	x := float64(y)
	switch {
	case top <= 0x3f3: // |y| < pi/4
		if top <= 0x397 { // |y| < 2^-12
			return y, 1
		}
		return sincosfPoly(x, x*x, &sincosfTab[0], 0)
	case top <= 0x42e: // |y| < 120
		p := &sincosfTab[0]
		n := (int32(x*p[scHpiInv]) + 0x800000) >> 24
		r := math.FMA(-float64(n), p[scHpi], x)
		s := p[n&3]
		if n&2 != 0 {
			p = &sincosfTab[1]
		}
		return sincosfPoly(r*s, r*r, p, int(n))
	case top <= 0x7f7:
		sign := int(iy >> 31)
		r, n := sincosfReduceLarge(iy)
		p := &sincosfTab[0]
		s := p[(n+sign)&3]
		if (n+sign)&2 != 0 {
			p = &sincosfTab[1]
		}
		return sincosfPoly(r*s, r*r, p, n)
	}
	nan := y - y
	return nan, nan
}

func sincosfPoly(x, x2 float64, p *[14]float64, n int) (sin, cos float32) {
	x3 := x2 * x
	x4 := x2 * x2
	x5 := x2 * x3
	x6 := x2 * x4
	s1 := math.FMA(x2, p[scS3], p[scS2])
	c2 := math.FMA(x2, p[scC4], p[scC3])
	c1 := math.FMA(x2, p[scC1], p[scC0])
	s := math.FMA(x3, p[scS1], x)
	c := math.FMA(x4, p[scC2], c1)
	sv := float32(math.FMA(s1, x5, s))
	cv := float32(math.FMA(c2, x6, c))
	if n&1 != 0 {
		return cv, sv
	}
	return sv, cv
}

// sincosfReduceLarge reduces |y| >= 120 modulo pi/2 with integer
// arithmetic on a 192-bit 4/pi (the result is in [-pi/4, pi/4]).
func sincosfReduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0])
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * 0x1.921fb54442d18p-62, int(n)
}

// siluRow sets y[i] = silu(x[i]) * g[i] as ggml_vec_swiglu_f32: whole
// vectors of lanes with ggml_v_silu, the rest with expf.
func siluRow(y, x, g []float32, lanes int) {
	g = g[:len(x)]
	y = y[:len(x)]
	nv := len(x) / lanes * lanes
	tensor.SwiGLUGGML(y[:nv], x[:nv], g[:nv])
	for i := nv; i < len(x); i++ {
		v := x[i]
		y[i] = v / (1 + tensor.Expf(-v)) * g[i]
	}
}

func fma32(a, b, c float32) float32 { return tensor.FMA32(a, b, c) }
