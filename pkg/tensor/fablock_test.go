package tensor

import (
	"math"
	"math/rand"
	"testing"
)

// tileKQGeneric is the score chain of ggml's tiled flash attention for one
// query: kt is the tile transposed ([len(q)][FATile] f32); each score is a
// chain of fused multiply-adds over the key dimension in order, then
// multiplied by scale.
func tileKQGeneric(out, kt, q []float32, scale float32) {
	for j := 0; j < FATile; j++ {
		var s float32
		for d, qd := range q {
			s = FMA32(kt[d*FATile+j], qd, s)
		}
		out[j] = s * scale
	}
}

// The blocked kernels must give the bits of the one-query-at-a-time
// chains (tileKQGeneric, tileVAccGeneric), which follow ggml.
func TestTileBlocksMatchChains(t *testing.T) {
	for _, dk := range []int{16, 32, 64, 80, 128, 256} {
		r := rand.New(rand.NewSource(int64(dk)))
		kt := randF32(r, dk*FATile)
		q := randF32(r, FABlock*dk)
		got := make([]float32, FABlock*FATile)
		TileKQBlock(got, kt, q, dk, 0.125)
		want := make([]float32, FATile)
		for row := 0; row < FABlock; row++ {
			tileKQGeneric(want, kt, q[row*dk:(row+1)*dk], 0.125)
			for j := range want {
				if math.Float32bits(got[row*FATile+j]) != math.Float32bits(want[j]) {
					t.Fatalf("dk %d: score[%d][%d] = %g, chain gives %g", dk, row, j, got[row*FATile+j], want[j])
				}
			}
		}
		dv := dk
		v32 := randF32(r, FATile*dv)
		p := randF32(r, FABlock*FATile)
		for j := 0; j < FATile; j += 7 {
			p[j] = 0 // masked keys
		}
		acc := randF32(r, FABlock*dv)
		ref := append([]float32(nil), acc...)
		TileVAccBlock(acc, v32, p, dv)
		tileVAccBlockGeneric(ref, v32, p, dv)
		for i := range acc {
			if math.Float32bits(acc[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("dv %d: acc[%d] = %g, chain gives %g", dv, i, acc[i], ref[i])
			}
		}
	}
}

func BenchmarkTileBlock(b *testing.B) {
	const d = 64
	r := rand.New(rand.NewSource(1))
	kt, q := randF32(r, d*FATile), randF32(r, FABlock*d)
	v32, p, acc := randF32(r, FATile*d), randF32(r, FABlock*FATile), make([]float32, FABlock*d)
	out := make([]float32, FABlock*FATile)
	b.SetBytes(int64(2 * FABlock * FATile * d * 4))
	for i := 0; i < b.N; i++ {
		TileKQBlock(out, kt, q, d, 0.125)
		TileVAccBlock(acc, v32, p, d)
	}
}

func TestTileMaxSubSum(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 50; i++ {
		x := randF32(r, FATile)
		x[r.Intn(FATile)] = float32(math.Inf(-1))
		if i%5 == 0 {
			x[r.Intn(FATile)] = 9
		}
		if got, want := TileMax(x), tileMaxGeneric(x); got != want {
			t.Fatalf("TileMax %g, want %g", got, want)
		}
		for _, lanes := range []int{8, 16} {
			e := append([]float32(nil), x...)
			for j := range e {
				e[j] = float32(math.Exp(float64(e[j])))
			}
			if got, want := TileSum(e, lanes), tileSumGeneric(e, lanes); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("TileSum(%d lanes) %g, want %g", lanes, got, want)
			}
		}
		y := append([]float32(nil), x...)
		TileSub(x, 0.75)
		tileSubGeneric(y, 0.75)
		for j := range x {
			if math.Float32bits(x[j]) != math.Float32bits(y[j]) {
				t.Fatalf("TileSub[%d] = %g, want %g", j, x[j], y[j])
			}
		}
	}
}
