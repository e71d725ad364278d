package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

func smallOpts(arch, dtype string) GenOptions {
	return GenOptions{Arch: arch, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96,
		Vocab: 300, DType: dtype, Seed: 42, MaxPos: 256}
}

// genBoth writes the GGUF and HF forms of one random model and loads them.
func genBoth(t *testing.T, o GenOptions) (*Model, *Model) {
	t.Helper()
	dir := t.TempDir()
	gp, hp := filepath.Join(dir, "m.gguf"), filepath.Join(dir, "hf")
	if err := GenerateGGUF(gp, o); err != nil {
		t.Fatal(err)
	}
	if err := GenerateHF(hp, o); err != nil {
		t.Fatal(err)
	}
	g, err := Load(gp, LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	h, err := Load(hp, LoadOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return g, h
}

// prefillLogits runs one prefill of prompt and returns the last logits.
func prefillLogits(t *testing.T, m *Model, prompt []int32) []float32 {
	t.Helper()
	kv := m.NewKV(len(prompt))
	slots := make([]int32, len(prompt))
	pos := make([]int32, len(prompt))
	for i := range slots {
		slots[i], pos[i] = int32(i), int32(i)
	}
	out := [][]float32{make([]float32, m.Config().Vocab)}
	b := &Batch{Tokens: prompt, Positions: pos, Seqs: []Seq{{Start: 0, Len: len(prompt), Slots: slots, WantLogits: true}}}
	if err := m.Forward(b, kv, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

func maxAbsDiff(a, b []float32) (d float64) {
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func rms(a []float32) float64 {
	var s float64
	for _, v := range a {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(a)))
}

var testPrompt = []int32{1, 260, 270, 280, 290, 299, 3, 100, 259, 261}

// TestRandomModelsHFvsGGUF: for every architecture and weight type, the
// GGUF form (adjacent-pair RoPE for llama/mistral) and the HF form
// (rotate-half) of the same random model give the same logits and the
// same configuration.
func TestRandomModelsHFvsGGUF(t *testing.T) {
	for _, arch := range []string{"llama", "mistral", "qwen2", "qwen3", "granite", "phi3"} {
		for _, dt := range []string{"f32", "f16", "bf16", "q8_0", "q4_0"} {
			t.Run(arch+"/"+dt, func(t *testing.T) {
				g, h := genBoth(t, smallOpts(arch, dt))
				gc, hc := g.Config(), h.Config()
				if gc.Hidden != 64 || gc.KVHeads != 2 || gc.HeadDim != 16 || gc.Vocab != 300 || gc.DType != dt {
					t.Errorf("gguf config %+v", gc)
				}
				if gc.QKVBias != (arch == "qwen2") || gc.QKNorm != (arch == "qwen3") || hc.QKVBias != gc.QKVBias || hc.QKNorm != gc.QKNorm {
					t.Errorf("bias/norm flags: gguf %v/%v hf %v/%v", gc.QKVBias, gc.QKNorm, hc.QKVBias, hc.QKNorm)
				}
				gs, hs := [4]float32{gc.EmbedScale, gc.ResidualScale, gc.AttnScale, gc.LogitScale}, [4]float32{hc.EmbedScale, hc.ResidualScale, hc.AttnScale, hc.LogitScale}
				if gs != hs || (arch == "granite") != (gs[3] != 0) {
					t.Errorf("multipliers: gguf %v hf %v", gs, hs)
				}
				lg, lh := prefillLogits(t, g, testPrompt), prefillLogits(t, h, testPrompt)
				// Same weights; HF holds quantized weights dequantized to f32,
				// so only the q8_0 rounding of activations separates them.
				tol := 1e-4 * (1 + rms(lh))
				if dt == "q8_0" || dt == "q4_0" {
					tol = 0.03 * rms(lh)
				}
				if d := maxAbsDiff(lg, lh); d > tol || math.IsNaN(d) {
					t.Errorf("max |gguf-hf| logit difference %g > %g (rms %g)", d, tol, rms(lh))
				}
				if rms(lh) < 1e-3 {
					t.Errorf("logits are degenerate (rms %g)", rms(lh))
				}
			})
		}
	}
}

// TestQuantizedCloseToF32: the same random model in each type gives
// logits close to the f32 model's.
func TestQuantizedCloseToF32(t *testing.T) {
	dir := t.TempDir()
	logits := map[string][]float32{}
	for _, dt := range []string{"f32", "f16", "bf16", "q8_0", "q4_0"} {
		p := filepath.Join(dir, dt+".gguf")
		if err := GenerateGGUF(p, smallOpts("llama", dt)); err != nil {
			t.Fatal(err)
		}
		m, err := Load(p, LoadOptions{Threads: 1, NoTokenizer: true})
		if err != nil {
			t.Fatal(err)
		}
		logits[dt] = prefillLogits(t, m, testPrompt)
		m.Close()
	}
	ref := logits["f32"]
	relErr := func(dt string) float64 {
		diff := make([]float32, len(ref))
		for i := range ref {
			diff[i] = logits[dt][i] - ref[i]
		}
		return rms(diff) / rms(ref)
	}
	for dt, tol := range map[string]float64{"f16": 0.003, "bf16": 0.02, "q8_0": 0.03, "q4_0": 0.2} {
		rel := relErr(dt)
		t.Logf("%s: rms logit error %.4f of the f32 rms", dt, rel)
		if rel > tol {
			t.Errorf("%s: rms logit error is %.4f of the f32 rms (limit %.3f)", dt, rel, tol)
		}
	}
	if relErr("q8_0") >= relErr("q4_0") || relErr("f16") >= relErr("q8_0") {
		t.Errorf("errors not ordered by precision: f16 %.4f q8_0 %.4f q4_0 %.4f", relErr("f16"), relErr("q8_0"), relErr("q4_0"))
	}
}

// TestBatchedMatchesSequential: several sequences in one batch, mixing
// prefill chunks and single-token decodes, give exactly the logits of
// running each sequence alone.
func TestBatchedMatchesSequential(t *testing.T) {
	for _, dt := range []string{"f32", "q8_0"} {
		for _, kvType := range []string{"f16", "f32"} {
			t.Run(dt+"/kv"+kvType, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "m.gguf")
				if err := GenerateGGUF(p, smallOpts("qwen2", dt)); err != nil {
					t.Fatal(err)
				}
				m, err := Load(p, LoadOptions{Threads: 3, KVType: kvType, NoTokenizer: true})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				checkBatched(t, m)
			})
		}
	}
}

func checkBatched(t *testing.T, m *Model) {
	V := m.Config().Vocab
	seqs := [][]int32{{1, 5, 9, 200, 31, 7, 8}, {1, 77}, {1, 100, 101, 102, 103, 104, 105, 106, 107, 108}}
	// Reference: each sequence alone, prefill of all but the last token,
	// then one decode step.
	want := make([][]float32, len(seqs))
	for i, s := range seqs {
		kv := m.NewKV(len(s))
		slots := make([]int32, len(s))
		pos := make([]int32, len(s))
		for j := range s {
			slots[j], pos[j] = int32(j), int32(j)
		}
		n := len(s) - 1
		out := [][]float32{make([]float32, V)}
		if err := m.Forward(&Batch{Tokens: s[:n], Positions: pos[:n], Seqs: []Seq{{Start: 0, Len: n, Slots: slots[:n], WantLogits: false}}}, kv, out); err != nil {
			t.Fatal(err)
		}
		if err := m.Forward(&Batch{Tokens: s[n:], Positions: pos[n:], Seqs: []Seq{{Start: 0, Len: 1, Slots: slots, WantLogits: true}}}, kv, out); err != nil {
			t.Fatal(err)
		}
		want[i] = out[0]
	}
	// Batched, sharing one KV store with interleaved slots: step 1
	// prefills seq 0 fully-but-one and seq 2 partly; step 2 mixes seq 0's
	// decode, seq 1's whole prompt and the rest of seq 2's prompt.
	kv := m.NewKV(64)
	next := int32(63)
	slotsOf := make([][]int32, len(seqs))
	alloc := func(i, n int) {
		for ; n > 0; n-- {
			slotsOf[i] = append(slotsOf[i], next)
			next -= 2
			if next < 0 {
				next = 62
			}
		}
	}
	type part struct{ seq, from, to int }
	step := func(parts []part) [][]float32 {
		b := &Batch{}
		out := make([][]float32, len(parts))
		for k, pt := range parts {
			alloc(pt.seq, pt.to-len(slotsOf[pt.seq]))
			sq := Seq{Start: len(b.Tokens), Len: pt.to - pt.from, Slots: slotsOf[pt.seq][:pt.to], WantLogits: pt.to == len(seqs[pt.seq])}
			for j := pt.from; j < pt.to; j++ {
				b.Tokens = append(b.Tokens, seqs[pt.seq][j])
				b.Positions = append(b.Positions, int32(j))
			}
			b.Seqs = append(b.Seqs, sq)
			out[k] = make([]float32, V)
		}
		if err := m.Forward(b, kv, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	step([]part{{0, 0, 6}, {2, 0, 4}})
	got := step([]part{{0, 6, 7}, {1, 0, 2}, {2, 4, 10}})
	for k, i := range []int{0, 1, 2} {
		if d := maxAbsDiff(got[k], want[i]); d > 1e-5*(1+rms(want[i])) {
			t.Errorf("seq %d: batched logits differ from sequential by %g", i, d)
		}
	}
}

func TestForwardNoAllocs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	if err := GenerateGGUF(p, smallOpts("llama", "q8_0")); err != nil {
		t.Fatal(err)
	}
	m, err := Load(p, LoadOptions{Threads: 2, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	kv := m.NewKV(128)
	slots := make([]int32, 128)
	for i := range slots {
		slots[i] = int32(i)
	}
	out := [][]float32{make([]float32, m.Config().Vocab), make([]float32, m.Config().Vocab)}
	b := &Batch{Tokens: []int32{5, 6}, Positions: []int32{10, 10}, Seqs: []Seq{{Start: 0, Len: 1, Slots: slots[:11], WantLogits: true}, {Start: 1, Len: 1, Slots: slots[:11], WantLogits: true}}}
	// Warm up the scratch buffers with a larger prefill.
	prefill := &Batch{Tokens: make([]int32, 11), Positions: make([]int32, 11), Seqs: []Seq{{Start: 0, Len: 11, Slots: slots[:11], WantLogits: true}}}
	for i := range prefill.Positions {
		prefill.Positions[i] = int32(i)
	}
	if err := m.Forward(prefill, kv, out); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		if err := m.Forward(b, kv, out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("decode step allocates %v times", allocs)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.gguf")
	if err := GenerateGGUF(good, smallOpts("llama", "f32")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A GGUF whose architecture is unknown.
	f, err := gguf.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(name string, edit func(w *gguf.Writer, ti *gguf.TensorInfo) bool) string {
		w := gguf.NewWriter()
		for _, k := range f.Keys() {
			v, _ := f.Value(k)
			w.Set(k, v)
		}
		for i := range f.Tensors {
			ti := f.Tensors[i]
			if edit(w, &ti) {
				continue
			}
			w.AddTensor(ti.Name, ti.Type, ti.Shape, f.TensorData(&f.Tensors[i]))
		}
		p := filepath.Join(dir, name)
		if err := w.WriteFile(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknownArch := rewrite("arch.gguf", func(w *gguf.Writer, _ *gguf.TensorInfo) bool {
		w.Set("general.architecture", "gpt2")
		return false
	})
	missing := rewrite("missing.gguf", func(_ *gguf.Writer, ti *gguf.TensorInfo) bool { return ti.Name == "blk.1.ffn_up.weight" })
	// iq2_xxs: a type the loader does not compute on.
	iq2 := rewrite("iq2.gguf", func(w *gguf.Writer, ti *gguf.TensorInfo) bool {
		if ti.Name != "blk.0.attn_v.weight" {
			return false
		}
		w.AddTensor(ti.Name, gguf.IQ2_XXS, []uint64{256, 4}, make([]byte, 4*66))
		return true
	})
	badShape := rewrite("shape.gguf", func(w *gguf.Writer, ti *gguf.TensorInfo) bool {
		if ti.Name != "blk.0.attn_k.weight" {
			return false
		}
		w.AddTensor(ti.Name, gguf.F32, []uint64{64, 16}, make([]byte, 64*16*4))
		return true
	})
	f.Close()
	hfDir := filepath.Join(dir, "hf")
	if err := GenerateHF(hfDir, smallOpts("llama", "f32")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(hfDir, "model.safetensors"))
	cases := []struct {
		name, path string
		want       []string
	}{
		{"missing file", filepath.Join(dir, "nope.gguf"), []string{"nope.gguf"}},
		{"truncated tensor", write("trunc.gguf", data[:len(data)-200]), []string{"trunc.gguf", `tensor "output.weight"`, "truncated"}},
		{"unknown arch", unknownArch, []string{"arch.gguf", `unknown architecture "gpt2"`}},
		{"missing tensor", missing, []string{"missing.gguf", `"blk.1.ffn_up.weight"`}},
		{"unsupported dtype", iq2, []string{"iq2.gguf", `"blk.0.attn_v.weight"`, "iq2_xxs", "not supported"}},
		{"wrong shape", badShape, []string{"shape.gguf", `"blk.0.attn_k.weight"`, "shape"}},
		{"hf without weights", hfDir, []string{hfDir, "safetensors"}},
	}
	for _, c := range cases {
		_, err := Load(c.path, LoadOptions{NoTokenizer: true})
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
}

func TestForwardRejectsBadBatches(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	if err := GenerateGGUF(p, smallOpts("llama", "f32")); err != nil {
		t.Fatal(err)
	}
	m, err := Load(p, LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	kv := m.NewKV(4)
	out := [][]float32{make([]float32, 300)}
	cases := []struct {
		name string
		b    Batch
		out  [][]float32
	}{
		{"positions", Batch{Tokens: []int32{1}, Positions: nil, Seqs: []Seq{{Start: 0, Len: 1, Slots: []int32{0}, WantLogits: true}}}, out},
		{"token id", Batch{Tokens: []int32{300}, Positions: []int32{0}, Seqs: []Seq{{Start: 0, Len: 1, Slots: []int32{0}, WantLogits: true}}}, out},
		{"slot range", Batch{Tokens: []int32{1}, Positions: []int32{0}, Seqs: []Seq{{Start: 0, Len: 1, Slots: []int32{4}, WantLogits: true}}}, out},
		{"slots length", Batch{Tokens: []int32{1}, Positions: []int32{0}, Seqs: []Seq{{Start: 0, Len: 1, Slots: []int32{0, 1}, WantLogits: true}}}, out},
		{"uncovered", Batch{Tokens: []int32{1, 2}, Positions: []int32{0, 1}, Seqs: []Seq{{Start: 0, Len: 1, Slots: []int32{0}, WantLogits: true}}}, out},
		{"no logits buffer", Batch{Tokens: []int32{1}, Positions: []int32{0}, Seqs: []Seq{{Start: 0, Len: 1, Slots: []int32{0}, WantLogits: true}}}, nil},
	}
	for _, c := range cases {
		if err := m.Forward(&c.b, kv, c.out); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	other := &Model{cfg: Config{Layers: 1}}
	if err := m.Forward(&Batch{}, other.NewKV(1), nil); err == nil {
		t.Error("foreign KV store: no error")
	}
}

// TestGeneratedTokenizers: the GGUF-embedded vocabulary and the HF
// tokenizer.json of a generated model tokenize text identically.
func TestGeneratedTokenizers(t *testing.T) {
	g, h := genBoth(t, smallOpts("llama", "f32"))
	if g.Tokenizer() == nil || h.Tokenizer() == nil {
		t.Fatal("tokenizer missing")
	}
	for _, text := range []string{"hello world", "Once upon a time, a cat!", "naïve 東京 🙂", "  two  spaces"} {
		a, b := g.Tokenizer().Encode(text, true), h.Tokenizer().Encode(text, true)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q: gguf %v hf %v", text, a, b)
		}
		if got := h.Tokenizer().Decode(b, true); got != text {
			t.Errorf("decode(encode(%q)) = %q", text, got)
		}
	}
}
