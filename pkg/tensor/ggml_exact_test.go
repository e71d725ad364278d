package tensor

import (
	"math"
	"math/rand"
	"testing"
)

// exactness tests: the assembly kernels must give the same bits as the
// portable definitions of llama.cpp's summation orders.

func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.Intn(8)-4)))
	}
	return v
}

func TestGGMLKernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, n := range []int{1, 3, 7, 8, 12, 15, 16, 17, 31, 32, 33, 44, 63, 64, 65, 100, 128, 172, 200, 256, 300, 1000} {
		for rep := 0; rep < 20; rep++ {
			a, b := randF32(r, n), randF32(r, n)
			for _, L := range []int{8, 16} {
				want := dotF32GGMLGeneric(a, b, L)
				var got float32
				if L == 16 {
					got = dotF32GGML16(a, b)
				} else {
					got = dotF32GGML8(a, b)
				}
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("vec dot L=%d n=%d: %x, generic %x", L, n, got, want)
				}
				if n%L == 0 {
					want = dotF32SgemmGeneric(a, b, L)
					if L == 16 {
						got = dotF32Sgemm16(a, b)
					} else {
						got = dotF32Sgemm8(a, b)
					}
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("sgemm L=%d n=%d: %x, generic %x", L, n, got, want)
					}
				}
			}
			x16, y16 := make([]uint16, n), make([]uint16, n)
			for i := range x16 {
				x16[i], y16[i] = F32ToF16(a[i]), F32ToF16(b[i])
			}
			if got, want := dotF16GGML(x16, y16), dotF16GGMLGeneric(x16, y16); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("f16 dot n=%d: %x, generic %x", n, got, want)
			}
		}
	}
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	cases := [][3]float32{
		{1, 1, 0x1p-25},                // exact midpoint inputs
		{1 + 0x1p-23, 1 + 0x1p-23, -1}, // cancellation
		{0x1p-100, 0x1p-40, 0x1p-149},  // subnormal result
		{3, 0x1.000002p0, 0x1p-24},
	}
	for i := 0; i < 200000; i++ {
		a, b := float32(r.NormFloat64()), float32(r.NormFloat64())
		// c chosen so that a*b+c often lands near float32 midpoints
		c := -float32(float64(a) * float64(b))
		c += float32(r.NormFloat64()) * 0x1p-24
		cases = append(cases, [3]float32{a, b, c})
	}
	for _, c := range cases {
		got := FMA32(c[0], c[1], c[2])
		want := fmaBig(c[0], c[1], c[2])
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("FMA32(%x, %x, %x) = %x, want %x", c[0], c[1], c[2], got, want)
		}
	}
}

// fmaBig rounds a*b+c once using math.FMA's exact float64 product-sum only
// when it is exact, else by a careful comparison of neighbours.
func fmaBig(a, b, c float32) float32 {
	// a*b+c is exactly representable with at most ~300 bits; compare the
	// two float32 candidates around the float64 result by exact
	// arithmetic on float64 pieces.
	p := float64(a) * float64(b)
	s := p + float64(c)
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb) // s + e == a*b + c exactly
	r := float32(s)
	lo, hi := r, r
	if float64(r) > s || (float64(r) == s && e < 0) {
		lo = math.Nextafter32(r, float32(math.Inf(-1)))
	} else {
		hi = math.Nextafter32(r, float32(math.Inf(1)))
	}
	// distance of each candidate to s+e, computed exactly enough in float64
	dl := (s - float64(lo)) + e
	dh := (float64(hi) - s) - e
	switch {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	}
	if math.Float32bits(lo)&1 == 0 {
		return lo
	}
	return hi
}

func TestDotF16GGMLRows(t *testing.T) {
	saved := ggmlLanes
	defer func() { ggmlLanes = saved }()
	for _, L := range []int{8, 16} {
		ggmlLanes = L
		testDotF16GGMLRows(t)
	}
}

func testDotF16GGMLRows(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for _, n := range []int{1, 5, 8, 16, 32, 63, 64, 96, 100, 128, 192} {
		base := make([]uint16, 40*n+7)
		for i := range base {
			base[i] = F32ToF16(float32(r.NormFloat64()))
		}
		q := make([]uint16, n)
		for i := range q {
			q[i] = F32ToF16(float32(r.NormFloat64()))
		}
		for _, rows := range []int{1, 3, 4, 7, 9, 13} {
			offs := make([]int, rows)
			for j := range offs {
				offs[j] = r.Intn(len(base) - n + 1)
			}
			out := make([]float32, rows)
			dotF16GGMLRows(out, base, offs, q)
			for j, o := range offs {
				if want := dotF16GGMLGeneric(base[o:o+n], q); math.Float32bits(out[j]) != math.Float32bits(want) {
					t.Fatalf("lanes %d n=%d row %d: %x, want %x", ggmlLanes, n, j, out[j], want)
				}
			}
		}
	}
}

func TestFlashAccF16(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, hd := range []int{8, 16, 64, 12, 128, 192} {
		v := make([]uint16, 50*hd)
		for i := range v {
			v[i] = F32ToF16(float32(r.NormFloat64()))
		}
		n := 37
		offs := make([]int, n)
		ms, vs := make([]float32, n), make([]float32, n)
		for j := range offs {
			offs[j] = r.Intn(50) * hd
			ms[j], vs[j] = 1, float32(r.Float64())
			if r.Intn(4) == 0 {
				ms[j], vs[j] = float32(r.Float64()), 1
			}
		}
		a1, a2 := make([]uint16, hd), make([]uint16, hd)
		for i := range a1 { // a running accumulator, as when called again
			a1[i] = F32ToF16(float32(r.NormFloat64()))
			a2[i] = a1[i]
		}
		flashAccF16(a1, v, offs, ms, vs)
		flashAccF16Generic(a2, v, offs, ms, vs)
		for i := range a1 {
			if a1[i] != a2[i] {
				t.Fatalf("hd=%d col %d: %x, generic %x", hd, i, a1[i], a2[i])
			}
		}
	}
}

func TestDotF16Sgemm(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, n := range []int{16, 32, 64, 160, 256} {
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i], b[i] = F32ToF16(float32(r.NormFloat64())), F32ToF16(float32(r.NormFloat64()))
		}
		if got, want := DotF16Sgemm(a, b), sgemmF16Generic(a, b); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("n=%d: %x, generic %x", n, got, want)
		}
	}
}

func TestF16ToF32Row(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	for _, n := range []int{1, 7, 16, 64, 200} {
		v := make([]uint16, n)
		for i := range v {
			v[i] = F32ToF16(float32(r.NormFloat64()))
		}
		f := make([]float32, len(v))
		F16ToF32Row(f, v)
		for i := range v {
			if f[i] != F16ToF32(v[i]) {
				t.Fatalf("F16ToF32Row n=%d at %d", n, i)
			}
		}
	}
}

func TestVExpGGML(t *testing.T) {
	r := rand.New(rand.NewSource(17))
	x := make([]float32, 0, 4096)
	for _, v := range []float32{0, -0.0, 1, -1, 88, 89, -87, -88, -100, -104, -150, 150, 200, -200, 1e-8, float32(math.Inf(-1)), float32(math.Inf(1))} {
		x = append(x, v)
	}
	for len(x) < cap(x)-64 {
		x = append(x, float32(r.NormFloat64()*40))
	}
	for v := float32(-87.5); len(x) < cap(x); v -= 0.37 { // subnormal results
		x = append(x, v)
	}
	x = x[:len(x)-5] // a length that leaves an 8-lane and a scalar tail
	saved := ggmlLanes
	defer func() { ggmlLanes = saved }()
	for _, L := range []int{16, 8} {
		ggmlLanes = L
		y := make([]float32, len(x))
		VExpGGML(y, x)
		g := randF32(r, len(x))
		s := make([]float32, len(x))
		SwiGLUGGML(s, x, g)
		for i, v := range x {
			if w := vexpLane(v); math.Float32bits(y[i]) != math.Float32bits(w) {
				t.Fatalf("L=%d vexp(%x) = %x, lane %x", L, v, y[i], w)
			}
			if w := v / (1 + vexpLane(0-v)) * g[i]; math.Float32bits(s[i]) != math.Float32bits(w) && !(w != w && s[i] != s[i]) {
				t.Fatalf("L=%d swiglu(%x) = %x, lane %x", L, v, s[i], w)
			}
		}
	}
}
