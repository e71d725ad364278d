package gguf

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"testing"
)

// testdata/dequant_vectors.json holds two random blocks of each type and
// their values as computed by llama.cpp's dequantize_row_* (ggml-quants.c,
// compiled into a small C harness).
func TestDequantizeMatchesGGML(t *testing.T) {
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
	for _, typ := range []GGMLType{Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K} {
		v, ok := vec[typ.String()]
		if !ok {
			t.Fatalf("no vectors for %s", typ)
		}
		got := make([]float32, len(v.Values))
		if err := Dequantize(typ, v.Bytes, got); err != nil {
			t.Fatal(err)
		}
		for i, want := range v.Values {
			if float32(want) != got[i] && !(math.IsNaN(want) && math.IsNaN(float64(got[i]))) {
				t.Fatalf("%s value %d: got %v, ggml %v", typ, i, got[i], want)
			}
		}
	}
	if err := Dequantize(Q6_K, make([]byte, 10), make([]float32, 256)); err == nil {
		t.Error("short input: no error")
	}
	if err := Dequantize(Q8_K, make([]byte, 292), make([]float32, 256)); err == nil {
		t.Error("unsupported type: no error")
	}
}

// TestDequantizeMatchesLlamaCppLibs decodes blocks written by ggml's quantizers and
// compares every value with ggml's dequantize_row_* (bit for bit), from
// pkg/tensor's reference file (written by llama.cpp's libraries, see
// pkg/tensor/testdata/README.md): section 2, after the dot-product section.
func TestDequantizeMatchesLlamaCppLibs(t *testing.T) {
	b, err := os.ReadFile("../tensor/testdata/kquant_ref.bin")
	if err != nil {
		t.Fatal(err)
	}
	const rows, cols, toks, n = 16, 768, 4, 1024
	skip := 4*toks*cols + toks*cols/256*292 + 3*(4+4*toks*rows) + rows*cols/256*(144+176+210) + 2*4*toks*rows
	b = b[skip:]
	b = b[4*n:] // the values that were quantized
	seen := map[GGMLType]bool{}
	for len(b) > 0 {
		typ := GGMLType(binary.LittleEndian.Uint32(b))
		size := int(binary.LittleEndian.Uint32(b[4:]))
		enc, want := b[8:8+size], b[8+size:8+size+4*n]
		b = b[8+size+4*n:]
		got := make([]float32, n)
		if err := Dequantize(typ, enc, got); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		for i := range got {
			if w := binary.LittleEndian.Uint32(want[4*i:]); math.Float32bits(got[i]) != w {
				t.Fatalf("%s value %d: %v, ggml %v", typ, i, got[i], math.Float32frombits(w))
			}
		}
		seen[typ] = true
	}
	for _, typ := range []GGMLType{Q2_K, Q3_K, IQ4_NL, IQ4_XS, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K} {
		if !seen[typ] {
			t.Errorf("%s: not in the reference file", typ)
		}
	}
}
