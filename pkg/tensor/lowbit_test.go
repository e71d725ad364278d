package tensor

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"testing"
)

// lref is one type's section of testdata/lowbit_ref.bin, written by
// testdata/lowbit_ref.c from llama.cpp's own libraries (README.md there).
type lref struct {
	typ        DType
	cols, vdt  int
	x          []float32 // lrefG tokens (regenerated, not stored)
	wf         []float32 // the weights before ggml quantized them (regenerated)
	act        []byte    // the first lrefT tokens quantized to the vec_dot_type
	w          []byte    // lrefR rows
	vec        []float32 // ggml_vec_dot_*, [token][row]
	gemv, gemm []float32 // repacked kernels (q2_K, iq4_nl, mxfp4)
	graph      []float32 // ggml_mul_mat of all lrefG tokens
}

const lrefR, lrefT, lrefG = 16, 4, 8

var ggmlTypeIDs = map[uint32]DType{3: Q4_1, 6: Q5_0, 7: Q5_1, 10: Q2_K, 11: Q3_K, 20: IQ4_NL, 23: IQ4_XS, 39: MXFP4}

// lrefRand is lowbit_ref.c's frand.
type lrefRand uint64

func (r *lrefRand) next() float32 {
	v := uint64(*r)
	v ^= v << 13
	v ^= v >> 7
	v ^= v << 17
	*r = lrefRand(v)
	return float32(float64(v>>40)/float64(1<<24))*2 - 1
}

func readLowRef(t *testing.T) []lref {
	t.Helper()
	b, err := os.ReadFile("testdata/lowbit_ref.bin")
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
	u32 := func() int { v := binary.LittleEndian.Uint32(b); b = b[4:]; return int(v) }
	rng := lrefRand(0x9E3779B97F4A7C15)
	var out []lref
	for len(b) > 0 {
		id := uint32(u32())
		typ, ok := ggmlTypeIDs[id]
		if !ok {
			t.Fatalf("fixture type %d", id)
		}
		r := lref{typ: typ, cols: u32(), vdt: u32()}
		r.wf = make([]float32, lrefR*r.cols) // stored quantized
		for i := range r.wf {
			r.wf[i] = rng.next()
			if i%97 == 0 {
				r.wf[i] *= 5
			}
			if i%64 < 16 {
				r.wf[i] += 0.2
			}
		}
		r.x = make([]float32, lrefG*r.cols)
		for i := range r.x {
			s := float32(1)
			if i%61 == 0 {
				s = 21
			}
			r.x[i] = rng.next() * s
		}
		xb := map[int]int{8: r.cols / 32 * 34, 9: r.cols / 32 * 36, 15: r.cols / 256 * 292}[r.vdt]
		r.act = take(lrefT * xb)
		rb, _ := typ.RowBytes(r.cols)
		r.w = take(lrefR * rb)
		r.vec = f32s(lrefT * lrefR)
		if typ == Q2_K || typ == IQ4_NL || typ == MXFP4 {
			r.gemv, r.gemm = f32s(lrefT*lrefR), f32s(lrefT*lrefR)
		}
		r.graph = f32s(lrefG * lrefR)
		out = append(out, r)
	}
	if len(out) != len(ggmlTypeIDs) {
		t.Fatalf("fixture holds %d of the %d types", len(out), len(ggmlTypeIDs))
	}
	return out
}

// lowTask quantizes T tokens of x for w's type as matMul does.
func lowTask(w *Matrix, x []float32, T int) *mmTask {
	c := NewCtx(1)
	defer c.Close()
	m := &mmTask{T: T, cols: w.Cols}
	if w.Type.actQ8K() {
		m.xk = *actQ8K(x, T, w.Cols)
		return m
	}
	nb := w.Cols / QK
	m.xq, m.xd, m.xs1 = make([]int8, T*w.Cols), make([]float32, T*nb), make([]float32, T*nb)
	for t := 0; t < T; t++ {
		QuantizeActQ8(x[t*w.Cols:(t+1)*w.Cols], m.xq[t*w.Cols:], m.xd[t*nb:])
	}
	fillQ8_1Sums(m.xs1, x[:T*w.Cols], m.xq)
	return m
}

// TestLowBitActMatchesGGML: the activations of each type are quantized
// to its vec_dot_type (q8_0, q8_1 or q8_K) with ggml's bytes.
func TestLowBitActMatchesGGML(t *testing.T) {
	for _, r := range readLowRef(t) {
		w, err := NewMatrix(r.typ, lrefR, r.cols, r.w)
		if err != nil {
			t.Fatal(err)
		}
		m := lowTask(w, r.x, lrefT)
		var got []byte
		for tok := 0; tok < lrefT; tok++ {
			if r.typ.actQ8K() {
				nb := r.cols / QKK
				for b := 0; b < nb; b++ {
					got = binary.LittleEndian.AppendUint32(got, math.Float32bits(m.xk.D[tok*nb+b]))
					for _, q := range m.xk.Q[tok*r.cols+b*QKK : tok*r.cols+(b+1)*QKK] {
						got = append(got, byte(q))
					}
					for _, s := range m.xk.BSums[16*(tok*nb+b) : 16*(tok*nb+b+1)] {
						got = binary.LittleEndian.AppendUint16(got, uint16(s))
					}
				}
				continue
			}
			nb := r.cols / QK
			for b := 0; b < nb; b++ {
				got = binary.LittleEndian.AppendUint16(got, F32ToF16(m.xd[tok*nb+b]))
				if r.typ.actQ8_1() {
					got = binary.LittleEndian.AppendUint16(got, F32ToF16(m.xs1[tok*nb+b]))
				}
				for _, q := range m.xq[tok*r.cols+b*QK : tok*r.cols+(b+1)*QK] {
					got = append(got, byte(q))
				}
			}
		}
		for i := range got {
			if got[i] != r.act[i] {
				t.Fatalf("%s activations byte %d: %#x, ggml %#x", r.typ, i, got[i], r.act[i])
			}
		}
	}
}

// TestLowBitMatchesLlamaCpp checks every kernel of lowbit_dot.go against
// llama.cpp's result for the same bytes: ggml_vec_dot_*, the repacked
// gemv/gemm of q2_K, iq4_nl and mxfp4, and whole batched products
// (tinyBLAS on iq4_nl and q5_0, the IQ panel gemm on iq4_xs, vec_dot on the
// rest, mxfp4 included).
func TestLowBitMatchesLlamaCpp(t *testing.T) {
	for _, r := range readLowRef(t) {
		w, err := NewMatrix(r.typ, lrefR, r.cols, r.w)
		if err != nil {
			t.Fatal(err)
		}
		rb := w.RowBytes()
		check := func(name string, T int, want []float32, f func(row []byte, tok int) float32) {
			t.Helper()
			for tok := 0; tok < T; tok++ {
				for row := 0; row < lrefR; row++ {
					if got := f(r.w[row*rb:(row+1)*rb], tok); !bitsEqual(got, want[tok*lrefR+row]) {
						t.Errorf("%s %s token %d row %d: %v, llama.cpp %v", r.typ, name, tok, row, got, want[tok*lrefR+row])
					}
				}
			}
		}
		m := lowTask(w, r.x, lrefG)
		cols, nbK, nb := r.cols, r.cols/QKK, r.cols/QK
		k := func(tok int) ([]int8, []float32, []int16) {
			return m.xk.Q[tok*cols : (tok+1)*cols], m.xk.D[tok*nbK : (tok+1)*nbK], m.xk.BSums[16*tok*nbK : 16*(tok+1)*nbK]
		}
		q := func(tok int) ([]int8, []float32, []float32) {
			return m.xq[tok*cols : (tok+1)*cols], m.xd[tok*nb : (tok+1)*nb], m.xs1[tok*nb : (tok+1)*nb]
		}
		// kernel is the product of a row with token tok as llama.cpp
		// computes it in a matrix of a multiple of 8 rows (rows8) or not,
		// for a token of the given mode.
		kernel := func(rows8 bool, mode RowMode) func(row []byte, tok int) float32 {
			return func(row []byte, tok int) float32 {
				var lr lowRow
				lr.decode(r.typ, row, cols)
				if r.typ.actQ8K() {
					xq, xd, xb := k(tok)
					return lr.dot(r.typ, rows8, mode, xq, xd, nil, xb)
				}
				xq, xd, xs := q(tok)
				return lr.dot(r.typ, rows8, mode, xq, xd, xs, nil)
			}
		}
		vec, batch := kernel(false, 0), kernel(false, RowSgemm|RowGemm4)
		switch r.typ {
		case IQ4_NL, MXFP4:
			check("repacked gemv", lrefT, r.gemv, kernel(true, 0))
			check("repacked gemm", lrefT, r.gemm, kernel(true, RowGemm4|RowSgemm))
		case Q2_K:
			check("repacked gemv", lrefT, r.gemv, kernel(true, 0))
			check("repacked gemm", lrefT, r.gemm, kernel(true, RowGemm4|RowSgemm))
		case IQ4_XS:
			batch = kernel(true, RowSgemm|RowGemm4|RowPanel8)
		}
		check("vec_dot", lrefT, r.vec, vec)
		check("ggml_mul_mat of 8 tokens", lrefG, r.graph, batch)
	}
}

// TestMatMulGGMLLowBit: through MatMulGGML (a 16-row matrix, so llama.cpp
// repacks q2_K, iq4_nl and mxfp4), each token follows the kernel llama.cpp picks
// for its position in a batch of 4 or 8 tokens, whatever the thread count.
func TestMatMulGGMLLowBit(t *testing.T) {
	for _, threads := range []int{1, 2} {
		ctx := NewCtx(threads)
		for _, r := range readLowRef(t) {
			w, err := NewMatrix(r.typ, lrefR, r.cols, r.w)
			if err != nil {
				t.Fatal(err)
			}
			for _, T := range []int{1, lrefT, lrefG} {
				modes := make([]RowMode, T)
				for i := range modes {
					modes[i] = LlamaCppRowMode(T, i)
				}
				y := make([]float32, T*lrefR)
				if err := ctx.MatMulGGML(r.x, T, modes, Out{w, y}); err != nil {
					t.Fatal(err)
				}
				for tok := 0; tok < min(T, lrefT); tok++ {
					want := r.vec
					switch {
					case r.typ == Q2_K && modes[tok]&RowGemm4 != 0:
						want = r.gemm
					case r.typ == Q2_K || r.typ == IQ4_NL || r.typ == MXFP4:
						want = r.gemv
					case r.typ == IQ4_XS && T >= 8 || r.typ == Q5_0 && T >= 2:
						want = r.graph
					}
					for row := 0; row < lrefR; row++ {
						if got := y[tok*lrefR+row]; !bitsEqual(got, want[tok*lrefR+row]) {
							t.Fatalf("%s threads %d batch %d token %d row %d: %v, llama.cpp %v", r.typ, threads, T, tok, row, got, want[tok*lrefR+row])
						}
					}
				}
			}
		}
		ctx.Close()
	}
}

// TestQuantizeLowRoundTrip: gen-model's quantizers write blocks that
// decode close to their input for each type of lowbit.go.
func TestQuantizeLowRoundTrip(t *testing.T) {
	r := readKRef(t)
	for _, tc := range []struct {
		typ DType
		tol float32 // relative to the largest |value|; mxfp4: ggml's quantizer clips a block at 1.5 * 2^floor(log2 amax)
	}{{Q4_1, 0.1}, {Q5_0, 0.05}, {Q5_1, 0.05}, {IQ4_NL, 0.15}, {IQ4_XS, 0.15}, {MXFP4, 0.26}, {Q2_K, 0.4}, {Q3_K, 0.25}} {
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

// TestQuantizeMXFP4MatchesGGML: mxfp4's quantizer is ggml's reference
// one (quantize_row_mxfp4_ref, which ggml_quantize_chunk runs): the same
// bytes for the fixture's weights.
func TestQuantizeMXFP4MatchesGGML(t *testing.T) {
	for _, r := range readLowRef(t) {
		if r.typ != MXFP4 {
			continue
		}
		got, err := Quantize(MXFP4, r.wf)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != r.w[i] {
				t.Fatalf("byte %d (block %d): %#x, ggml %#x", i, i/mxfp4BlockBytes, got[i], r.w[i])
			}
		}
		return
	}
	t.Fatal("no mxfp4 section in the fixture")
}

// TestDequantizeRandomBlocks: random bytes as blocks (any scale, NaN and
// infinity included) decode as ggml's dequantize_row_* decodes them;
// testdata/dequant_vectors.json holds two blocks of each type and the
// values a small C harness over ggml-quants.c computed.
func TestDequantizeRandomBlocks(t *testing.T) {
	b, err := os.ReadFile("testdata/dequant_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vec map[string]struct {
		Bytes  []byte    `json:"bytes"`
		Values []float64 `json:"values"`
	}
	if err := json.Unmarshal(b, &vec); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []DType{Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K} {
		v, ok := vec[typ.String()]
		if !ok {
			t.Fatalf("no vectors for %s", typ)
		}
		got := make([]float32, len(v.Values))
		Dequantize(typ, v.Bytes, got)
		for i, want := range v.Values {
			if float32(want) != got[i] && !(math.IsNaN(want) && math.IsNaN(float64(got[i]))) {
				t.Fatalf("%s value %d: got %v, ggml %v", typ, i, got[i], want)
			}
		}
	}
}

// TestI8LanesAsm: the assembly lanes equal the portable ones, for chunks
// summed one, four and eight at a time.
func TestI8LanesAsm(t *testing.T) {
	rng := lrefRand(3)
	v, q, sc := make([]int8, 512), make([]int8, 512), make([]int16, 32)
	for i := range v {
		v[i], q[i] = int8(rng.next()*127), int8(rng.next()*127)
	}
	for i := range sc {
		sc[i] = int16(rng.next() * 63)
	}
	for _, per := range []int{1, 4, 8} {
		got, want := make([]int32, 128), make([]int32, 128)
		i8Lanes(v, q, sc, per, got)
		i8LanesGeneric(v, q, sc, per, want)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("per %d lane %d: %d, portable %d", per, i, got[i], want[i])
			}
		}
	}
}
