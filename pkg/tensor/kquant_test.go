package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// kref is testdata/kquant_ref.bin, written by testdata/kquant_ref.c from
// llama.cpp's own libraries (see testdata/README.md).
type kref struct {
	x     []float32 // refT tokens x refC
	q8k   []byte    // their q8_K blocks as ggml lays them out
	types []kdot
	gemv  []float32 // q4_K repacked gemv, [token][row]
	gemm  []float32 // q4_K repacked gemm over the four tokens
	src   []float32 // dequantization input (refN values)
	deq   []kdeq
}

type kdot struct {
	typ uint32 // ggml type id
	w   []byte // refR rows
	y   []float32
}

type kdeq struct {
	typ uint32
	enc []byte
	y   []float32
}

const (
	refR, refC, refT, refN    = 16, 768, 4, 1024
	ggmlQ4K, ggmlQ5K, ggmlQ6K = 12, 13, 14
)

func readKRef(t *testing.T) *kref {
	t.Helper()
	b, err := os.ReadFile("testdata/kquant_ref.bin")
	if err != nil {
		t.Fatal(err)
	}
	f32s := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		b = b[4*n:]
		return out
	}
	take := func(n int) []byte { p := b[:n]; b = b[n:]; return p }
	u32 := func() uint32 { v := binary.LittleEndian.Uint32(b); b = b[4:]; return v }
	r := &kref{x: f32s(refT * refC)}
	r.q8k = take(refT * refC / QKK * (4 + 256 + 32))
	for _, bb := range []int{q4KBlockBytes, q5KBlockBytes, q6KBlockBytes} {
		d := kdot{typ: u32()}
		d.w = take(refR * refC / QKK * bb)
		d.y = f32s(refT * refR)
		r.types = append(r.types, d)
	}
	r.gemv, r.gemm = f32s(refT*refR), f32s(refT*refR)
	r.src = f32s(refN)
	for len(b) > 0 {
		d := kdeq{typ: u32()}
		d.enc = take(int(u32()))
		d.y = f32s(refN)
		r.deq = append(r.deq, d)
	}
	return r
}

func bitsEqual(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// q8KQuantizers are the portable and (where it runs) assembly q8_K
// activation quantizers.
var q8KQuantizers = []struct {
	name string
	f    func(x []float32, q []int8, d []float32, bsums []int16)
}{{"Go", quantizeActQ8KGeneric}, {"asm", quantizeActQ8K}}

func TestQuantizeActQ8KMatchesGGML(t *testing.T) {
	for _, k := range q8KQuantizers {
		t.Run(k.name, func(t *testing.T) { testQuantizeActQ8K(t, k.f) })
	}
}

func testQuantizeActQ8K(t *testing.T, quantize func(x []float32, q []int8, d []float32, bsums []int16)) {
	r := readKRef(t)
	nb := refC / QKK
	q := make([]int8, refC)
	d := make([]float32, nb)
	bs := make([]int16, 16*nb)
	for tok := 0; tok < refT; tok++ {
		quantize(r.x[tok*refC:(tok+1)*refC], q, d, bs)
		for b := 0; b < nb; b++ {
			blk := r.q8k[(tok*nb+b)*292:]
			if got, want := math.Float32bits(d[b]), binary.LittleEndian.Uint32(blk); got != want {
				t.Fatalf("token %d block %d: d %08x, ggml %08x", tok, b, got, want)
			}
			for j := 0; j < QKK; j++ {
				if q[b*QKK+j] != int8(blk[4+j]) {
					t.Fatalf("token %d block %d value %d: %d, ggml %d", tok, b, j, q[b*QKK+j], int8(blk[4+j]))
				}
			}
			for j := 0; j < 16; j++ {
				if want := int16(binary.LittleEndian.Uint16(blk[260+2*j:])); bs[16*b+j] != want {
					t.Fatalf("token %d block %d bsum %d: %d, ggml %d", tok, b, j, bs[16*b+j], want)
				}
			}
		}
	}
}

// TestKQuantMatchesLlamaCpp checks every K-quant dot product, portable and
// assembly, against llama.cpp's results for the same bytes: q5_K/q6_K
// against ggml_vec_dot_*, q4_K against the repacked gemv and gemm (matrix
// rows a multiple of 8) and ggml_vec_dot_q4_K_q8_K (other matrices).
func TestKQuantMatchesLlamaCpp(t *testing.T) {
	r := readKRef(t)
	xk := actQ8K(r.x, refT, refC)
	type kernel struct {
		name string
		f    func(w []byte, xq []int8, xd []float32, xbs []int16) float32
		want []float32
	}
	q4, q5, q6 := r.types[0], r.types[1], r.types[2]
	if q4.typ != ggmlQ4K || q5.typ != ggmlQ5K || q6.typ != ggmlQ6K {
		t.Fatalf("fixture types %d %d %d", q4.typ, q5.typ, q6.typ)
	}
	for _, k := range []struct {
		name string
		typ  DType
		w    []byte
		f    func(w []byte, xq []int8, xd []float32, xbs []int16) float32
		want []float32
	}{
		{"q4_K gemv (Go)", Q4_K, q4.w, dotQ4KGeneric, r.gemv},
		{"q4_K gemm (Go)", Q4_K, q4.w, dotQ4KGemmGeneric, r.gemm},
		{"q4_K", Q4_K, q4.w, dotQ4K, r.gemv},
		{"q4_K gemm", Q4_K, q4.w, dotQ4KGemm, r.gemm},
		{"q4_K vec_dot (Go)", Q4_K, q4.w, dotQ4KVecGeneric, q4.y},
		{"q5_K (Go)", Q5_K, q5.w, dotQ5KGeneric, q5.y},
		{"q5_K", Q5_K, q5.w, dotQ5K, q5.y},
		{"q6_K (Go)", Q6_K, q6.w, dotQ6KGeneric, q6.y},
		{"q6_K", Q6_K, q6.w, dotQ6K, q6.y},
	} {
		rb, _ := k.typ.RowBytes(refC)
		nb := refC / QKK
		for tok := 0; tok < refT; tok++ {
			for row := 0; row < refR; row++ {
				got := k.f(k.w[row*rb:(row+1)*rb], xk.Q[tok*refC:(tok+1)*refC], xk.D[tok*nb:(tok+1)*nb], xk.BSums[16*tok*nb:16*(tok+1)*nb])
				if want := k.want[tok*refR+row]; !bitsEqual(got, want) {
					t.Errorf("%s token %d row %d: %v, llama.cpp %v", k.name, tok, row, got, want)
				}
			}
		}
	}
}

func actQ8K(x []float32, T, cols int) *ActQ8K {
	nb := cols / QKK
	a := &ActQ8K{Q: make([]int8, T*cols), D: make([]float32, T*nb), BSums: make([]int16, 16*T*nb), S: make([]int32, 8*T*nb)}
	for t := 0; t < T; t++ {
		quantizeActQ8K(x[t*cols:(t+1)*cols], a.Q[t*cols:], a.D[t*nb:], a.BSums[16*t*nb:])
	}
	a.fillS()
	return a
}

// TestDequantizeMatchesGGML decodes blocks written by ggml's quantizers
// and compares every value with ggml's dequantize_row_* (bit for bit).
func TestDequantizeMatchesGGML(t *testing.T) {
	r := readKRef(t)
	types := map[uint32]DType{ggmlQ4K: Q4_K, ggmlQ5K: Q5_K, ggmlQ6K: Q6_K}
	for id, dt := range ggmlTypeIDs {
		types[id] = dt
	}
	seen := 0
	for _, d := range r.deq {
		dt, ok := types[d.typ]
		if !ok {
			continue
		}
		seen++
		got := make([]float32, refN)
		Dequantize(dt, d.enc, got)
		for i := range got {
			if !bitsEqual(got[i], d.y[i]) {
				t.Fatalf("%s value %d: %v, ggml %v", dt, i, got[i], d.y[i])
			}
		}
	}
	if seen != len(types) {
		t.Fatalf("fixture holds %d of the %d types", seen, len(types))
	}
}

// TestQuantizeKRoundTrip checks that the gen-model quantizer writes blocks
// that decode close to their input (within one quantization step of the
// block's scale) for each K-quant type.
func TestQuantizeKRoundTrip(t *testing.T) {
	r := readKRef(t)
	for _, tc := range []struct {
		typ DType
		tol float32 // relative to the largest |value|
	}{{Q4_K, 0.15}, {Q5_K, 0.08}, {Q6_K, 0.04}} {
		enc, err := Quantize(tc.typ, r.src)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, refN)
		Dequantize(tc.typ, enc, got)
		var amax, emax float32
		for i, v := range r.src {
			amax = max(amax, abs32(v))
			emax = max(emax, abs32(got[i]-v))
		}
		if emax > tc.tol*amax {
			t.Errorf("%s: max error %v of max |value| %v", tc.typ, emax, amax)
		}
	}
}

// TestMatMulGGMLKQuant: through MatMulGGML, each token of a q4_K batch
// follows llama.cpp's gemm or gemv as its row mode says, and q5_K/q6_K
// tokens its vec_dot, whatever the batch and thread count.
func TestMatMulGGMLKQuant(t *testing.T) {
	r := readKRef(t)
	for _, threads := range []int{1, 2} {
		ctx := NewCtx(threads)
		for i, typ := range []DType{Q4_K, Q5_K, Q6_K} {
			w, err := NewMatrix(typ, refR, refC, r.types[i].w)
			if err != nil {
				t.Fatal(err)
			}
			for _, modes := range [][]RowMode{nil, {RowGemm4, 0, RowGemm4 | RowSgemm, 0}, {RowGemm4, RowGemm4, RowGemm4, RowGemm4}} {
				y := make([]float32, refT*refR)
				if err := ctx.MatMulGGML(r.x, refT, modes, Out{w, y}); err != nil {
					t.Fatal(err)
				}
				for tok := 0; tok < refT; tok++ {
					want := r.types[i].y
					if typ == Q4_K {
						want = r.gemv
						if modes != nil && modes[tok]&RowGemm4 != 0 {
							want = r.gemm
						}
					}
					for row := 0; row < refR; row++ {
						if got := y[tok*refR+row]; !bitsEqual(got, want[tok*refR+row]) {
							t.Fatalf("%s threads %d modes %v token %d row %d: %v, llama.cpp %v", typ, threads, modes, tok, row, got, want[tok*refR+row])
						}
					}
				}
			}
		}
		ctx.Close()
	}
}

// TestQ4Kx8MatchesLlamaCpp: the packed eight-row q4_K kernels, portable
// and assembly, give llama.cpp's gemv and gemm results.
func TestQ4Kx8MatchesLlamaCpp(t *testing.T) {
	r := readKRef(t)
	xk := actQ8K(r.x, refT, refC)
	nb := refC / QKK
	packed := packQ4Kx8(nil, r.types[0].w, refR, refC)
	gb := nb * q4Kx8GroupBytes
	for _, k := range []struct {
		name string
		f    func(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out *[8]float32)
	}{{"Go", q4Kx8Generic}, {"asm", func(w []byte, nb int, xq []int8, xd []float32, xs []int32, gemm bool, out *[8]float32) {
		q4Kx8Rows(w, nb, xq, xd, xs, gemm, out[:])
	}}} {
		for _, gemm := range []bool{false, true} {
			want := r.gemv
			if gemm {
				want = r.gemm
			}
			for tok := 0; tok < refT; tok++ {
				for g := 0; g < refR/8; g++ {
					var out [8]float32
					k.f(packed[g*gb:(g+1)*gb], nb, xk.Q[tok*refC:], xk.D[tok*nb:], xk.S[8*tok*nb:], gemm, &out)
					for i, got := range out {
						if w := want[tok*refR+8*g+i]; !bitsEqual(got, w) {
							t.Errorf("%s gemm=%v token %d row %d: %v, llama.cpp %v", k.name, gemm, tok, 8*g+i, got, w)
						}
					}
				}
				if k.name == "asm" { // both groups in one call
					out := make([]float32, refR)
					q4Kx8Rows(packed, nb, xk.Q[tok*refC:], xk.D[tok*nb:], xk.S[8*tok*nb:], gemm, out)
					for i, got := range out {
						if w := want[tok*refR+i]; !bitsEqual(got, w) {
							t.Errorf("rows gemm=%v token %d row %d: %v, llama.cpp %v", gemm, tok, i, got, w)
						}
					}
				}
			}
		}
	}
}

// TestQ4Kx8x4MatchesOneToken: the four-token q4_K kernels, portable and
// assembly, give each token exactly what the one-token kernel gives it —
// on llama.cpp's reference data (its gemv and gemm results) and on random
// packed groups with extreme quants, scales and activations.
func TestQ4Kx8x4MatchesOneToken(t *testing.T) {
	kernels := []struct {
		name string
		f    func(w []byte, nb int, xq []int8, xd []float32, bs []int16, gemm bool, out *[32]float32)
	}{{"Go", q4Kx8x4Generic}, {"asm", q4Kx8x4}}
	r := readKRef(t)
	xk := actQ8K(r.x, refT, refC)
	nb := refC / QKK
	packed := packQ4Kx8(nil, r.types[0].w, refR, refC)
	gb := nb * q4Kx8GroupBytes
	for _, k := range kernels {
		for _, gemm := range []bool{false, true} {
			want := r.gemv
			if gemm {
				want = r.gemm
			}
			for g := 0; g < refR/8; g++ {
				var out [32]float32
				k.f(packed[g*gb:(g+1)*gb], nb, xk.Q, xk.D, xk.BSums, gemm, &out)
				for tok := 0; tok < 4; tok++ {
					for i := 0; i < 8; i++ {
						if got, w := out[8*tok+i], want[tok*refR+8*g+i]; !bitsEqual(got, w) {
							t.Errorf("%s gemm=%v token %d row %d: %v, llama.cpp %v", k.name, gemm, tok, 8*g+i, got, w)
						}
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(19, 4))
	for _, nb := range []int{1, 3, 22} {
		for trial := 0; trial < 4; trial++ {
			w := randQ4Kx8Groups(rng, 1, nb, trial == 0)
			xk := randActQ8K(rng, 4, nb, trial == 0)
			for _, gemm := range []bool{false, true} {
				var want [32]float32
				for tok := 0; tok < 4; tok++ {
					var res [8]float32
					q4Kx8Rows(w, nb, xk.Q[tok*nb*QKK:], xk.D[tok*nb:], xk.S[8*tok*nb:], gemm, res[:])
					copy(want[8*tok:], res[:])
				}
				for _, k := range kernels {
					var out [32]float32
					k.f(w, nb, xk.Q, xk.D, xk.BSums, gemm, &out)
					for i := range out {
						if !bitsEqual(out[i], want[i]) {
							t.Fatalf("%s nb %d trial %d gemm=%v token %d row %d: %v, one-token kernel %v", k.name, nb, trial, gemm, i/8, i%8, out[i], want[i])
						}
					}
				}
			}
		}
	}
}

// randActQ8K is a q8_K batch of T tokens of nb super-blocks with random
// quants (all -127 when extreme) and consistent 16-value sums.
func randActQ8K(rng *rand.Rand, T, nb int, extreme bool) *ActQ8K {
	xk := &ActQ8K{Q: make([]int8, T*nb*QKK), D: make([]float32, T*nb), BSums: make([]int16, 16*T*nb), S: make([]int32, 8*T*nb)}
	for i := range xk.Q {
		xk.Q[i] = int8(rng.IntN(255) - 127)
		if extreme {
			xk.Q[i] = -127
		}
	}
	for i := range xk.D {
		xk.D[i] = rng.Float32()*2 - 1
	}
	for i := range xk.BSums {
		for _, v := range xk.Q[16*i : 16*i+16] {
			xk.BSums[i] += int16(v)
		}
	}
	xk.fillS()
	return xk
}

// randKBlocks is nb random super-blocks of type dt with finite f16 scales
// (all quant bits set and scales at their extremes when extreme).
func randKBlocks(rng *rand.Rand, dt DType, nb int, extreme bool) []byte {
	bb := kBlockBytes(dt)
	w := make([]byte, nb*bb)
	for i := range w {
		w[i] = byte(rng.Uint32())
		if extreme {
			w[i] = 0xff
		}
	}
	for b := 0; b < nb; b++ {
		blk := w[b*bb : (b+1)*bb]
		f16 := func(off int) { binary.LittleEndian.PutUint16(blk[off:], uint16(0x0400+rng.IntN(0x3c00))) }
		if dt == Q6_K {
			f16(208)
			if extreme {
				for i := 192; i < 208; i++ {
					blk[i] = 0x80 // scale -128
				}
			}
		} else {
			f16(0)
			f16(2)
		}
	}
	return w
}

// TestKDotx4MatchesOneToken: the four-token q5_K/q6_K kernels, portable
// and assembly, give each token exactly what the portable one-token
// kernel gives, and so do the one-token kernels over several rows.
func TestKDotx4MatchesOneToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 5))
	type kern = func(w []byte, xq []int8, xd []float32, xbs []int16, out *[4]float32)
	for _, k := range []struct {
		dt        DType
		one       func(w []byte, xq []int8, xd []float32, xbs []int16) float32
		asm, port kern
		rows      func(w []byte, xq []int8, xd []float32, xbs []int16, out []float32)
	}{
		{Q5_K, dotQ5KGeneric, dotQ5Kx4, dotQ5Kx4Generic, dotQ5KRows},
		{Q6_K, dotQ6KGeneric, dotQ6Kx4, dotQ6Kx4Generic, dotQ6KRows},
	} {
		for _, nb := range []int{1, 3, 22} {
			for trial := 0; trial < 4; trial++ {
				w := randKBlocks(rng, k.dt, nb, trial == 0)
				xk := randActQ8K(rng, 4, nb, trial == 0)
				var want [4]float32
				for tok := range want {
					want[tok] = k.one(w, xk.Q[tok*nb*QKK:(tok+1)*nb*QKK], xk.D[tok*nb:(tok+1)*nb], xk.BSums[16*tok*nb:16*(tok+1)*nb])
				}
				// The one-token rows kernel on 5 rows.
				rows := append(randKBlocks(rng, k.dt, 4*nb, trial == 0), w...)
				got := make([]float32, 5)
				k.rows(rows, xk.Q[:nb*QKK], xk.D[:nb], xk.BSums[:16*nb], got)
				bb := kBlockBytes(k.dt)
				for r, v := range got {
					if want := k.one(rows[r*nb*bb:(r+1)*nb*bb], xk.Q, xk.D[:nb], xk.BSums); !bitsEqual(v, want) {
						t.Fatalf("%s rows nb %d trial %d row %d: %v, one-row kernel %v", k.dt, nb, trial, r, v, want)
					}
				}
				for name, f := range map[string]kern{"asm": k.asm, "Go": k.port} {
					var out [4]float32
					f(w, xk.Q, xk.D, xk.BSums, &out)
					for tok := range out {
						if !bitsEqual(out[tok], want[tok]) {
							t.Fatalf("%s %s nb %d trial %d token %d: %v, one-token kernel %v", k.dt, name, nb, trial, tok, out[tok], want[tok])
						}
					}
				}
			}
		}
	}
}

// TestQuantizeActQ8KAsm: the assembly quantizer writes the portable one's
// bytes on blocks with both signs of the largest magnitude (the first one
// sets the sign), all-zero blocks, ties after scaling, tiny and huge values.
func TestQuantizeActQ8KAsm(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 6))
	const nb = 12
	x := make([]float32, nb*QKK)
	for b := 0; b < nb; b++ {
		blk := x[b*QKK : (b+1)*QKK]
		scale := float32(math.Ldexp(1, rng.IntN(80)-40))
		for i := range blk {
			blk[i] = (rng.Float32()*2 - 1) * scale
		}
		switch b % 4 {
		case 0: // both signs of the maximum, the negative one first
			i, j := rng.IntN(QKK/2), QKK/2+rng.IntN(QKK/2)
			blk[i], blk[j] = -2*scale, 2*scale
		case 1:
			clear(blk)
		case 2: // multiples of max/254: products land on .5 ties
			for i := range blk {
				blk[i] = float32(rng.IntN(509)-254) * scale / 254
			}
			blk[rng.IntN(QKK)] = scale
		}
	}
	want := [3]any{make([]int8, len(x)), make([]float32, nb), make([]int16, 16*nb)}
	got := [3]any{make([]int8, len(x)), make([]float32, nb), make([]int16, 16*nb)}
	quantizeActQ8KGeneric(x, want[0].([]int8), want[1].([]float32), want[2].([]int16))
	quantizeActQ8K(x, got[0].([]int8), got[1].([]float32), got[2].([]int16))
	for i, v := range got[0].([]int8) {
		if w := want[0].([]int8)[i]; v != w {
			t.Fatalf("value %d (block %d): %d, portable %d", i, i/QKK, v, w)
		}
	}
	for b, v := range got[1].([]float32) {
		if w := want[1].([]float32)[b]; !bitsEqual(v, w) {
			t.Fatalf("block %d: d %v, portable %v", b, v, w)
		}
	}
	for i, v := range got[2].([]int16) {
		if w := want[2].([]int16)[i]; v != w {
			t.Fatalf("sum %d (block %d): %d, portable %d", i, i/16, v, w)
		}
	}
}

// randQ4Kx8Groups is groups packed q4_K groups of nb super-blocks each:
// random quants, finite f16 d and dmin (2^-14..2^1), random 6-bit scales
// and mins; extreme sets every quant bit and the largest scales and mins.
func randQ4Kx8Groups(rng *rand.Rand, groups, nb int, extreme bool) []byte {
	w := make([]byte, groups*nb*q4Kx8GroupBytes)
	for i := range w {
		w[i] = byte(rng.Uint32())
		if extreme && i%q4Kx8GroupBytes >= 160 {
			w[i] = 0xff
		}
	}
	for b := 0; b < groups*nb; b++ {
		grp := w[b*q4Kx8GroupBytes:]
		for i := 0; i < 16; i++ {
			binary.LittleEndian.PutUint16(grp[2*i:], uint16(0x0400+rng.IntN(0x3c00)))
		}
		for i := 32; i < 160; i++ {
			grp[i] = byte(rng.IntN(64))
			if extreme {
				grp[i] = 63
			}
		}
	}
	return w
}
