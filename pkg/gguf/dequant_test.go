package gguf

import (
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
