package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func randVec(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (r.Float32()*2 - 1) * scale
	}
	return v
}

func refDot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func close32(got float32, want float64, tol float64) bool {
	return math.Abs(float64(got)-want) <= tol*(1+math.Abs(want))
}

// TestDotKernels checks every dot product (assembly when available and the
// portable version) against a float64 reference on decoded weights.
func TestDotKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{32, 64, 96, 128, 160, 4096} {
		w := randVec(r, n, 1)
		x := randVec(r, n, 2)
		for _, dt := range []DType{F32, F16, BF16, Q8_0, Q4_0} {
			enc, err := Quantize(dt, w)
			if err != nil {
				t.Fatal(err)
			}
			dec := make([]float32, n)
			Dequantize(dt, enc, dec)
			var want float64
			var kernels map[string]float32
			switch dt {
			case F32:
				want = refDot(dec, x)
				kernels = map[string]float32{"asm": DotF32(dec, x), "generic": dotF32Generic(dec, x)}
			case F16:
				want = refDot(dec, x)
				kernels = map[string]float32{"asm": dotF16(enc, x), "generic": dotF16Generic(enc, x)}
			case BF16:
				want = refDot(dec, x)
				kernels = map[string]float32{"asm": dotBF16(enc, x), "generic": dotBF16Generic(enc, x)}
			case Q8_0, Q4_0:
				qs := make([]int8, n)
				ds := make([]float32, n/QK)
				QuantizeActQ8(x, qs, ds)
				xd := make([]float32, n)
				for i := range xd {
					xd[i] = float32(qs[i]) * ds[i/QK]
				}
				want = refDot(dec, xd)
				if dt == Q8_0 {
					kernels = map[string]float32{"asm": dotQ8(enc, qs, ds), "generic": dotQ8Generic(enc, qs, ds)}
				} else {
					kernels = map[string]float32{"asm": dotQ4(enc, qs, ds), "generic": dotQ4Generic(enc, qs, ds)}
				}
			}
			for name, got := range kernels {
				if !close32(got, want, 1e-5) {
					t.Errorf("%s n=%d %s: got %v want %v", dt, n, name, got, want)
				}
			}
		}
	}
}

func TestDotF32OddLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 80; n++ {
		a, b := randVec(r, n, 1), randVec(r, n, 1)
		if got, want := DotF32(a, b), refDot(a, b); !close32(got, want, 1e-5) {
			t.Errorf("n=%d: %v want %v", n, got, want)
		}
		enc, _ := Quantize(F16, a)
		dec := make([]float32, n)
		Dequantize(F16, enc, dec)
		if got, want := dotF16(enc, b), refDot(dec, b); !close32(got, want, 1e-5) {
			t.Errorf("f16 n=%d: %v want %v", n, got, want)
		}
		enc, _ = Quantize(BF16, a)
		Dequantize(BF16, enc, dec)
		if got, want := dotBF16(enc, b), refDot(dec, b); !close32(got, want, 1e-5) {
			t.Errorf("bf16 n=%d: %v want %v", n, got, want)
		}
	}
}

func TestF16Conversions(t *testing.T) {
	// Every half value round-trips through f32.
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f { // NaN
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, back)
		}
	}
	cases := []struct {
		f    float32
		want uint16
	}{{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e-8, 0}, {5.96e-8, 1},
		{1.0009765625 + 0.00048828125, 0x3c02}, // tie rounds to even
		{1.00048828125, 0x3c00}}
	for _, c := range cases {
		if got := F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%v) = %#04x want %#04x", c.f, got, c.want)
		}
	}
	if BF16ToF32(F32ToBF16(1.5)) != 1.5 || F32ToBF16(1.00390625) != 0x3f80 {
		t.Errorf("bf16 rounding wrong: %#04x", F32ToBF16(1.00390625))
	}
}

func TestQuantizeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randVec(r, 256, 3)
	for _, c := range []struct {
		dt  DType
		tol float64
	}{{F32, 0}, {F16, 2e-3}, {BF16, 1.6e-2}, {Q8_0, 0.02}, {Q4_0, 0.25}} {
		enc, err := Quantize(c.dt, x)
		if err != nil {
			t.Fatal(err)
		}
		dec := make([]float32, len(x))
		Dequantize(c.dt, enc, dec)
		for i := range x {
			if math.Abs(float64(dec[i]-x[i])) > c.tol*3 {
				t.Fatalf("%s: x[%d]=%v decoded %v", c.dt, i, x[i], dec[i])
			}
		}
	}
	if _, err := Quantize(Q4_0, make([]float32, 33)); err == nil {
		t.Error("q4_0 of 33 values: no error")
	}
}

// TestDotX4MatchesSingle: the four-token kernels give bit-identical
// results to the one-token kernels (batch size must not change numerics).
func TestDotX4MatchesSingle(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{32, 96, 2048} {
		for _, dt := range []DType{Q8_0, Q4_0} {
			w, _ := Quantize(dt, randVec(r, n, 1))
			nb := n / QK
			xq := make([]int8, 4*n)
			ds := make([]float32, 4*nb)
			for k := 0; k < 4; k++ {
				QuantizeActQ8(randVec(r, n, 3), xq[k*n:(k+1)*n], ds[k*nb:(k+1)*nb])
			}
			var got [4]float32
			if dt == Q8_0 {
				dotQ8x4(w, xq, ds, &got)
			} else {
				dotQ4x4(w, xq, ds, &got)
			}
			for k := 0; k < 4; k++ {
				var want float32
				if dt == Q8_0 {
					want = dotQ8(w, xq[k*n:(k+1)*n], ds[k*nb:(k+1)*nb])
				} else {
					want = dotQ4(w, xq[k*n:(k+1)*n], ds[k*nb:(k+1)*nb])
				}
				if got[k] != want {
					t.Errorf("%s n=%d token %d: x4 %v single %v", dt, n, k, got[k], want)
				}
			}
		}
	}
}

// dotQ4ChainRef is a q4_0 row (unpacked) · q8_0 activation with
// llama.cpp's repacked-q4_0 rounding: each block's exact integer dot
// product chained as acc = fma(isum, dw*dx, acc).
func dotQ4ChainRef(w []byte, xq []int8, ds []float32) float32 {
	var acc float32
	for b := range ds {
		blk := w[b*q4BlockBytes : (b+1)*q4BlockBytes]
		var isum int32
		for j := 0; j < QK/2; j++ {
			q := blk[2+j]
			isum += (int32(q&0xF) - 8) * int32(xq[b*QK+j])
			isum += (int32(q>>4) - 8) * int32(xq[b*QK+j+QK/2])
		}
		d := F16ToF32(binary.LittleEndian.Uint16(blk)) * ds[b]
		acc = FMA32(float32(isum), d, acc)
	}
	return acc
}

// TestQ4x8Kernels: the packed eight-row q4_0 kernel, for one to four
// (AVX2) or eight (VNNI) tokens, agrees bit for bit with the chained reference on the unpacked
// rows (and so with llama.cpp's repacked rounding), and closely with the
// plain dot product.
func TestQ4x8Kernels(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{32, 160, 2048} {
		nb := n / QK
		var all []byte
		rows := make([][]byte, 8)
		for k := range rows {
			rows[k], _ = Quantize(Q4_0, randVec(r, n, 1))
			all = append(all, rows[k]...)
		}
		packed := packQ4x8(nil, all, 8, n)
		const T = q4x8MaxTok
		xq := make([]int8, T*n)
		ds := make([]float32, T*nb)
		xds := make([]float32, 2*T*nb)
		for k := 0; k < T; k++ {
			QuantizeActQ8(randVec(r, n, 2), xq[k*n:(k+1)*n], ds[k*nb:(k+1)*nb])
		}
		fillQ4Sums(xds, xq, ds)
		for ntok := 1; ntok <= q4x8Tokens(); ntok++ {
			var got, gen [8 * q4x8MaxTok]float32
			q4x8(packed, nb, xq, xds, ntok, &got)
			q4x8Generic(packed, nb, xq, xds, ntok, &gen)
			for tok := 0; tok < ntok; tok++ {
				x, d := xq[tok*n:(tok+1)*n], ds[tok*nb:(tok+1)*nb]
				for k := range rows {
					want := dotQ4ChainRef(rows[k], x, d)
					if got[8*tok+k] != want || gen[8*tok+k] != want {
						t.Fatalf("n=%d ntok=%d row %d token %d: kernel %v generic %v reference %v",
							n, ntok, k, tok, got[8*tok+k], gen[8*tok+k], want)
					}
					if plain := dotQ4(rows[k], x, d); !close32(want, float64(plain), 1e-5) {
						t.Errorf("n=%d row %d: chain %v vs dot %v", n, k, want, plain)
					}
				}
			}
		}
	}
}

// TestQuantizeActQ8MatchesGeneric: the assembly quantizer gives the Go
// loop's bytes and scales, including all-zero blocks, exact .5 ties and
// huge and tiny magnitudes.
func TestQuantizeActQ8MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{32, 64, 2048, 5632} {
		x := make([]float32, n)
		for i := range x {
			switch r.IntN(6) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(r.IntN(255)-127) / 2 // ties after scaling when amax is 127
			case 2:
				x[i] = float32(r.NormFloat64() * 1e30)
			case 3:
				x[i] = float32(r.NormFloat64() * 1e-30)
			default:
				x[i] = float32(r.NormFloat64())
			}
		}
		for b := 0; b < n/QK; b += 3 { // some blocks all zero, some with amax exactly 63.5
			for j := 0; j < QK; j++ {
				x[b*QK+j] = 0
			}
		}
		q1, q2 := make([]int8, n), make([]int8, n)
		d1, d2 := make([]float32, n/QK), make([]float32, n/QK)
		QuantizeActQ8(x, q1, d1)
		quantizeActQ8Generic(x, q2, d2)
		if !slices.Equal(q1, q2) || !slices.Equal(d1, d2) {
			for i := range q1 {
				if q1[i] != q2[i] {
					t.Fatalf("n=%d: value %d (x=%v) quantized %d, generic %d", n, i, x[i], q1[i], q2[i])
				}
			}
			t.Fatalf("n=%d: scales differ: %v vs %v", n, d1, d2)
		}
	}
}
