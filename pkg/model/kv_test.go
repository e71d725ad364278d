package model

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWindowKVValidate: a windowed store refuses, as errors, sequences
// whose local slots are missing, freed inside a new token's window or out
// of range, and grows its local memory to the highest slot used.
func TestWindowKVValidate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gemma3.gguf")
	if err := GenerateGGUF(path, GenOptions{Arch: "gemma3", Hidden: 64, Layers: 2, Heads: 2, KVHeads: 1, FFN: 128, Vocab: 512,
		Seed: 3, DType: "f16", SlidingWindow: 4, SWAPattern: 2}); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, LoadOptions{NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	kv := m.NewWindowKV(16)
	if !kv.Windowed() || kv.LocalSlots() != 0 {
		t.Fatalf("windowed %v, %d local slots before use", kv.Windowed(), kv.LocalSlots())
	}
	logits := [][]float32{make([]float32, 512)}
	slots := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	cases := []struct {
		name, err string
		local     []int32
	}{
		{"no local slots", "local slots for 8 positions", nil},
		{"freed inside the window", "outside the KV store", []int32{-1, -1, -1, -1, -1, 5, 6, 7}},
		{"out of range", "outside the KV store", []int32{-1, -1, -1, -1, 16, 5, 6, 7}},
	}
	for _, c := range cases {
		b := &Batch{Tokens: []int32{5}, Positions: []int32{7}, Seqs: []Seq{{Start: 0, Len: 1, Slots: slots, Local: c.local, WantLogits: true}}}
		if err := m.Forward(b, kv, logits); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
	// Positions 0..3 freed: the token at 7 reads 4..7 only.
	b := &Batch{Tokens: []int32{5}, Positions: []int32{7}, Seqs: []Seq{{Start: 0, Len: 1, Slots: slots,
		Local: []int32{-1, -1, -1, -1, 9, 5, 6, 7}, WantLogits: true}}}
	if err := m.Forward(b, kv, logits); err != nil {
		t.Fatal(err)
	}
	if kv.LocalSlots() < 10 {
		t.Errorf("local memory for %d slots after using slot 9", kv.LocalSlots())
	}
	if err := m.Forward(b, m.NewKV(16), logits); err == nil {
		t.Error("local slots accepted by a store without a local part")
	}
}
