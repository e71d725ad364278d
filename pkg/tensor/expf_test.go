package tensor

import (
	"math"
	"math/rand"
	"testing"
)

// TestExpfRow: the row form equals Expf bit for bit, special values and
// ragged lengths included (the scalar Expf is checked against glibc's own
// results in pkg/model's TestGlibcLibm).
func TestExpfRow(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	specials := []float32{0, float32(math.Copysign(0, -1)), 88, -88, 88.72284, -103.97208, -103.27893, -87.33655,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-40, 1, -1}
	for _, tc := range []struct {
		name string
		gen  func() float32
	}{
		{"softmax range", func() float32 { return -30 * r.Float32() }},
		{"wide", func() float32 { return 200*r.Float32() - 150 }},
		{"small", func() float32 { return float32(r.NormFloat64() * 1e-3) }},
		{"with specials", func() float32 {
			if r.Intn(7) == 0 {
				return specials[r.Intn(len(specials))]
			}
			return float32(r.NormFloat64() * 10)
		}},
	} {
		for _, n := range []int{1, 3, 4, 5, 8, 31, 1000} {
			src := make([]float32, n)
			for i := range src {
				src[i] = tc.gen()
			}
			dst := make([]float32, n)
			ExpfRow(dst, src)
			for i, x := range src {
				want := Expf(x)
				if math.Float32bits(dst[i]) != math.Float32bits(want) && !(want != want && dst[i] != dst[i]) {
					t.Fatalf("%s n=%d: ExpfRow(%g) = %x, Expf %x", tc.name, n, x, math.Float32bits(dst[i]), math.Float32bits(want))
				}
			}
		}
	}
}

func BenchmarkExpf(b *testing.B) {
	src := make([]float32, 8192)
	for i := range src {
		src[i] = -float32(i%300) * 0.1
	}
	dst := make([]float32, len(src))
	b.Run("row", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ExpfRow(dst, src)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j, x := range src {
				dst[j] = Expf(x)
			}
		}
	})
}
