package tensor

import (
	"math"
	"math/rand"
	"testing"
)

// The fused decode kernels must give every head the bits of its own
// ggml chains (the generic definitions), for any number of heads (the
// kernels take up to four per call) and head sizes with and without the
// fused path.
func TestDecodeHeadsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	half := func(n int) []uint16 {
		v := make([]uint16, n)
		for i := range v {
			v[i] = F32ToF16(float32(r.NormFloat64()))
		}
		return v
	}
	for _, hd := range []int{64, 128, 80, 32} {
		for _, heads := range []int{1, 2, 3, 4, 5, 7, 8} {
			base := half(60*hd + 3)
			n := 1 + r.Intn(45)
			offs := make([]int, n)
			for j := range offs {
				offs[j] = r.Intn(60) * hd
			}
			q := half(heads * hd)
			out := make([]float32, heads*n)
			DotF16GGMLHeads(out, base, offs, q, heads, make([]float32, heads*hd))
			for h := 0; h < heads; h++ {
				for j, o := range offs {
					want := dotF16GGMLGeneric(base[o:o+hd], q[h*hd:(h+1)*hd])
					if got := out[h*n+j]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("hd %d heads %d: score[%d][%d] = %x, want %x", hd, heads, h, j, got, want)
					}
				}
			}
			ms, vs := make([]float32, heads*n), make([]float32, heads*n)
			for i := range ms {
				ms[i], vs[i] = 1, float32(r.Float64())
				if r.Intn(4) == 0 {
					ms[i], vs[i] = float32(r.Float64()), 1
				}
			}
			acc := half(heads * hd) // a running accumulator, as when called again
			want := append([]uint16(nil), acc...)
			FlashAccF16Heads(acc, base, offs, ms, vs, heads)
			for h := 0; h < heads; h++ {
				flashAccF16Generic(want[h*hd:(h+1)*hd], base, offs, ms[h*n:(h+1)*n], vs[h*n:(h+1)*n])
			}
			for i := range acc {
				if acc[i] != want[i] {
					t.Fatalf("hd %d heads %d: acc[%d] = %x, want %x", hd, heads, i, acc[i], want[i])
				}
			}
		}
	}
}

func BenchmarkDecodeHeads(b *testing.B) {
	const hd, heads, n = 64, 3, 4096
	r := rand.New(rand.NewSource(1))
	base := make([]uint16, n*hd)
	for i := range base {
		base[i] = F32ToF16(float32(r.NormFloat64()))
	}
	offs := make([]int, n)
	for j := range offs {
		offs[j] = j * hd
	}
	q := base[:heads*hd]
	qf, out := make([]float32, heads*hd), make([]float32, heads*n)
	ms, vs := make([]float32, heads*n), make([]float32, heads*n)
	for i := range ms {
		ms[i], vs[i] = 1, 0.5
	}
	acc := make([]uint16, heads*hd)
	for _, fused := range []bool{false, true} {
		name := "loop"
		if fused {
			name = "fused"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if fused {
					DotF16GGMLHeads(out, base, offs, q, heads, qf)
					FlashAccF16Heads(acc, base, offs, ms, vs, heads)
				} else {
					dotF16HeadsLoop(out, base, offs, q, heads)
					flashAccHeadsLoop(acc, base, offs, ms, vs, heads)
				}
			}
		})
	}
}
