package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/chattmpl"
)

// TestFamilyRegistry: every family file registered its family, lookups of
// other names fail naming what is supported, and each family's GGUF
// architecture and HF class are what llama.cpp's converter reads.
func TestFamilyRegistry(t *testing.T) {
	want := map[string]struct{ gguf, class string }{
		"llama": {"llama", "LlamaForCausalLM"}, "mistral": {"llama", "MistralForCausalLM"},
		"qwen2": {"qwen2", "Qwen2ForCausalLM"}, "qwen3": {"qwen3", "Qwen3ForCausalLM"},
		"gemma3": {"gemma3", "Gemma3ForCausalLM"}, "gemma2": {"gemma2", "Gemma2ForCausalLM"},
		"mixtral": {"llama", "MixtralForCausalLM"}, "qwen3moe": {"qwen3moe", "Qwen3MoeForCausalLM"},
		"qwen2moe": {"qwen2moe", "Qwen2MoeForCausalLM"}, "olmoe": {"olmoe", "OlmoeForCausalLM"},
		"gpt-oss": {"gpt-oss", "GptOssForCausalLM"},
	}
	for name, w := range want {
		f, err := lookupFamily(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.gguf() != w.gguf || f.hfClass != w.class {
			t.Errorf("%s: gguf %q class %q, want %q %q", name, f.gguf(), f.hfClass, w.gguf, w.class)
		}
	}
	_, err := lookupFamily("gpt2")
	if err == nil || !strings.Contains(err.Error(), `unknown architecture "gpt2"`) {
		t.Fatalf("gpt2: %v", err)
	}
	for name := range want {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not list %s", err, name)
		}
	}
	// config.json's model_type: a family's hfType, else its name.
	for mt, name := range map[string]string{"gemma3_text": "gemma3", "gemma2": "gemma2", "llama": "llama", "qwen3": "qwen3",
		"mixtral": "mixtral", "qwen3_moe": "qwen3moe", "qwen2_moe": "qwen2moe", "olmoe": "olmoe", "gpt_oss": "gpt-oss"} {
		if f, err := lookupHFFamily(mt); err != nil || f.name != name {
			t.Errorf("model_type %s: %v, %v", mt, f, err)
		}
	}
	// Gemma 3's multimodal config (model_type gemma3) is not the text model.
	if _, err := lookupHFFamily("gemma3"); err == nil || !strings.Contains(err.Error(), `model_type "gemma3" is not supported (the gemma3 family reads config.json model_type "gemma3_text")`) {
		t.Errorf("model_type gemma3: %v", err)
	}
}

func TestHFTensorNames(t *testing.T) {
	f, err := lookupFamily("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	for gg, hf := range map[string]string{
		"token_embd.weight":          "model.embed_tokens.weight",
		"output_norm.weight":         "model.norm.weight",
		"output.weight":              "lm_head.weight",
		"blk.3.attn_q.weight":        "model.layers.3.self_attn.q_proj.weight",
		"blk.0.attn_k.bias":          "model.layers.0.self_attn.k_proj.bias",
		"blk.11.attn_k_norm.weight":  "model.layers.11.self_attn.k_norm.weight",
		"blk.2.ffn_norm.weight":      "model.layers.2.post_attention_layernorm.weight",
		"blk.2.ffn_down.weight":      "model.layers.2.mlp.down_proj.weight",
		"blk.2.something_new.weight": "blk.2.something_new.weight",
		"rope_freqs.weight":          "rope_freqs.weight",
	} {
		if got := f.hfName(gg); got != hf {
			t.Errorf("%s -> %s, want %s", gg, got, hf)
		}
	}
}

// familyFixture is one family's llama.cpp fixture: the gen-model options
// of the files llama.cpp ran (testdata/README.md has the commands) and
// the runs of each GGUF type. The HF form (f16) is checked against the
// f16 runs.
type familyFixture struct {
	opts  GenOptions
	runs  map[string]string // dtype -> testdata file
	forms []string          // "gguf-f16", "gguf-q8_0", "hf-f16"
	// context is LoadOptions.Context: llama.cpp's n_ctx for the runs (the
	// reference scripts use 512, more for a longer prompt).
	context int
}

// checkFamilyFixture generates the fixture's files, loads each form and
// requires llama.cpp's tokenization, greedy tokens (all prompts in shared
// batches; at least 20 prompts with generated tokens — golden.mjs runs a
// 512-token context, so a longer prompt has none) and first-token
// log-probabilities (greedy_ids.mjs sizes its context to the prompt, so
// those cover the long prompts too, prefilled in 512-token chunks as
// llama.cpp splits them).
func checkFamilyFixture(t *testing.T, fx familyFixture) {
	dir := t.TempDir()
	for _, form := range fx.forms {
		t.Run(form, func(t *testing.T) {
			kind, dt, _ := strings.Cut(form, "-")
			o := fx.opts
			o.DType = dt
			path := filepath.Join(dir, form)
			gen := GenerateHF
			if kind == "gguf" {
				path += ".gguf"
				gen = GenerateGGUF
			}
			if err := gen(path, o); err != nil {
				t.Fatal(err)
			}
			m, err := Load(path, LoadOptions{Threads: 2, Context: fx.context})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			runs := readRuns(t, filepath.Join("testdata", fx.runs[dt]))
			generated := 0
			for _, r := range runs {
				if len(r.Gen) > 0 {
					generated++
				}
			}
			if generated < 20 {
				t.Fatalf("%d runs with generated tokens in %s, want >= 20", generated, fx.runs[dt])
			}
			for _, r := range runs {
				got := append([]int32{m.Tokenizer().BOS()}, m.Tokenizer().Encode(r.Prompt, false)...)
				if !equalIDs(got, r.Tokens) {
					t.Errorf("prompt %q: tokens %v, llama.cpp %v", r.Prompt, got, r.Tokens)
				}
				checkTop5(t, m, r, top5Tolerance(m, r))
			}
			if ok := checkRuns(t, m, runs); ok != len(runs) {
				t.Errorf("%d of %d runs match llama.cpp", ok, len(runs))
			}
		})
	}
}

// checkTop5 compares the first token's log-probabilities with llama.cpp's
// (they pin scalings greedy decoding cannot see, such as a logit divisor).
func checkTop5(t *testing.T, m *Model, r llamaRun, tol float64) {
	t.Helper()
	if len(r.Top5) == 0 {
		return
	}
	logits := prefillChunked(t, m, r.Tokens, llamaChunks(len(r.Tokens)))
	maxL := math.Inf(-1)
	for _, v := range logits {
		maxL = math.Max(maxL, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - maxL)
	}
	for _, tp := range r.Top5 {
		lp := float64(logits[int(tp[0])]) - maxL - math.Log(sum)
		if math.Abs(lp-tp[1]) > tol {
			t.Errorf("prompt %q: log p(%d) = %.6f, llama.cpp %.6f", r.Prompt, int(tp[0]), lp, tp[1])
			return
		}
	}
}

// top5Tolerance is 1e-4, except for a prompt longer than the cells
// llama.cpp gives a sliding-window layer's cache in greedy_ids.mjs's
// context (llama_kv_cache_iswa: window + n_ubatch 513, padded to 256):
// there the cache wraps and puts later keys in the cells of dropped ones,
// so its attention sums the keys of the window in another order (checked:
// with swaFullCache, which cannot wrap, llama.cpp gives our value to 1e-6
// on the one such gemma3 prompt; without, they differ by 1.5e-4).
func top5Tolerance(m *Model, r llamaRun) float64 {
	c := m.Config()
	if c.Window == 0 {
		return 1e-4
	}
	ctx := max(512, len(r.Tokens)+32+8)                 // greedy_ids.mjs's context
	cells := (min(ctx, c.Window+513) + 255) / 256 * 256 // n_ubatch: llamaChunks
	if len(r.Tokens) > cells {
		return 1e-3
	}
	return 1e-4
}

// TestFamilyChatTemplates: each family's chat template (written by
// gen-model) renders byte-exact with Python jinja2 as transformers sets it
// up (trim_blocks, lstrip_blocks) on the cases of
// testdata/chat_templates.json. strftime_now (gpt-oss's "Current date")
// rendered templateDate there; it renders today here.
func TestFamilyChatTemplates(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "chat_templates.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string][]struct {
		Name string          `json:"name"`
		Ctx  json.RawMessage `json:"ctx"`
		Want string          `json:"want"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	for _, name := range familyNames() {
		f := families[name]
		if f.chatTemplate == "" {
			continue
		}
		if len(cases[name]) == 0 {
			t.Errorf("%s has a chat template but no cases", name)
			continue
		}
		tmpl, err := chattmpl.New(f.chatTemplate)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, c := range cases[name] {
			got, err := tmpl.RenderJSON(c.Ctx)
			want := strings.ReplaceAll(c.Want, "Current date: "+templateDate, "Current date: "+time.Now().Format("2006-01-02"))
			if err != nil || got != want {
				t.Errorf("%s %s: %q, %v\nwant %q", name, c.Name, got, err, want)
			}
		}
	}
}

// templateDate is the date strftime_now("%Y-%m-%d") gave Python jinja2
// when testdata/chat_templates.json was rendered.
const templateDate = "2026-01-01"

// llamaBatch is the batch size the reference scripts give llama.cpp: a
// longer prompt is prefilled in chunks of this many tokens.
const llamaBatch = 512

// llamaChunks is how node-llama-cpp's llama.cpp splits an n-token prompt:
// llamaBatch tokens at a time (its JS side queues batches of the context's
// batchSize; for a sliding-window model it gives llama.cpp one more as
// n_batch = n_ubatch, headroom it does not fill).
func llamaChunks(n int) []int {
	var out []int
	for ; n > llamaBatch; n -= llamaBatch {
		out = append(out, llamaBatch)
	}
	return append(out, n)
}

// prefillChunked prefills prompt in the given chunks, as llama.cpp splits
// a prompt longer than its batch, and returns the last logits.
func prefillChunked(t *testing.T, m *Model, prompt []int32, chunks []int) []float32 {
	t.Helper()
	kv := m.NewKV(len(prompt))
	slots := make([]int32, len(prompt))
	for i := range slots {
		slots[i] = int32(i)
	}
	out := [][]float32{make([]float32, m.Config().Vocab)}
	start := 0
	for _, n := range chunks {
		end := start + n
		pos := make([]int32, end-start)
		for i := range pos {
			pos[i] = int32(start + i)
		}
		b := &Batch{Tokens: prompt[start:end], Positions: pos,
			Seqs: []Seq{{Start: 0, Len: end - start, Slots: slots[:end], WantLogits: end == len(prompt)}}}
		if err := m.Forward(b, kv, out); err != nil {
			t.Fatal(err)
		}
		start = end
	}
	return out[0]
}
