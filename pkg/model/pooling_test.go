package model

import (
	"math"
	"path/filepath"
	"testing"
)

// forwardOnce prefills prompt as one chunk in a fresh KV store and returns
// the final hidden states Forward wrote in mode, and the last logits.
func forwardOnce(t *testing.T, m *Model, prompt []int32, mode HiddenMode) (hidden, logits []float32) {
	t.Helper()
	kv := m.NewKV(len(prompt))
	slots, pos := make([]int32, len(prompt)), make([]int32, len(prompt))
	for i := range slots {
		slots[i], pos[i] = int32(i), int32(i)
	}
	hidden = make([]float32, m.Config().Hidden)
	out := [][]float32{make([]float32, m.Config().Vocab)}
	b := &Batch{Tokens: prompt, Positions: pos,
		Seqs: []Seq{{Start: 0, Len: len(prompt), Slots: slots, WantLogits: true, Hidden: hidden, HiddenMode: mode}}}
	if err := m.Forward(b, kv, out); err != nil {
		t.Fatal(err)
	}
	return hidden, out[0]
}

// TestForwardHidden checks the final hidden states Forward hands out for
// pooling against independent computations: the last token's state times
// the output head is the logits row; the sum over a prompt's tokens is the
// sum of the last-token states of its prefixes (causal attention), and the
// first token's is the last-token state of the one-token prefix. A
// sequence that wants hidden states without logits, next to one that
// wants logits, leaves that one's logits unchanged.
func TestForwardHidden(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.gguf")
			if err := GenerateGGUF(p, smallOpts(arch, "f32")); err != nil {
				t.Fatal(err)
			}
			m, err := Load(p, LoadOptions{Threads: 2, KVType: "f32", NoTokenizer: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			c := m.Config()
			prompt := []int32{1, 17, 230, 5, 99, 42, 7, 150}

			last, logits := forwardOnce(t, m, prompt, HiddenLast)
			row := make([]float32, c.Hidden)
			for v := range c.Vocab {
				m.output.DequantizeRow(v, row)
				var dot float64
				for i := range row {
					dot += float64(row[i]) * float64(last[i])
				}
				if d := math.Abs(dot - float64(logits[v])); d > 1e-3*(1+math.Abs(dot)) {
					t.Fatalf("token %d: hidden · output row = %g, logit %g", v, dot, logits[v])
				}
			}

			sum, _ := forwardOnce(t, m, prompt, HiddenSum)
			want := make([]float32, c.Hidden)
			for n := 1; n <= len(prompt); n++ {
				h, _ := forwardOnce(t, m, prompt[:n], HiddenLast)
				addInPlace(want, h)
			}
			if d := maxAbsDiff(sum, want); d > 1e-4*(1+rmsOf(want)) {
				t.Errorf("summed hidden states differ from the prefixes' by %g", d)
			}
			first, _ := forwardOnce(t, m, prompt, HiddenFirst)
			one, _ := forwardOnce(t, m, prompt[:1], HiddenLast)
			if d := maxAbsDiff(first, one); d > 1e-4*(1+rmsOf(one)) {
				t.Errorf("first hidden state differs from the one-token prompt's by %g", d)
			}

			// Batch: the embedding sequence (mean rows, no logits) first, then
			// a generating one; both agree with running alone.
			other := []int32{1, 3, 4}
			_, otherLogits := forwardOnce(t, m, other, HiddenLast)
			n := len(prompt)
			kv := m.NewKV(n + len(other))
			tokens := append(append([]int32(nil), prompt...), other...)
			pos := make([]int32, 0, len(tokens))
			s1, s2 := make([]int32, n), make([]int32, len(other))
			for i := range n {
				pos, s1[i] = append(pos, int32(i)), int32(i)
			}
			for i := range other {
				pos, s2[i] = append(pos, int32(i)), int32(n+i)
			}
			hid := make([]float32, c.Hidden)
			out := [][]float32{nil, make([]float32, c.Vocab)}
			b := &Batch{Tokens: tokens, Positions: pos, Seqs: []Seq{
				{Start: 0, Len: n, Slots: s1, Hidden: hid, HiddenMode: HiddenSum},
				{Start: n, Len: len(other), Slots: s2, WantLogits: true}}}
			if err := m.Forward(b, kv, out); err != nil {
				t.Fatal(err)
			}
			if d := maxAbsDiff(hid, sum); d != 0 {
				t.Errorf("batched sum differs by %g from alone", d)
			}
			if d := maxAbsDiff(out[1], otherLogits); d != 0 {
				t.Errorf("batch mate's logits differ by %g next to an embedding", d)
			}
		})
	}
}

func rmsOf(a []float32) float64 {
	var s float64
	for _, v := range a {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(a)))
}
