package model

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// gptossFixture is the gen-model gpt-oss llama.cpp ran (testdata/README.md):
// four layers, the even ones local with a 32-token window; 16 experts, 4
// used (gpt-oss's top-4); YaRN factor 32 over a 4096-token original
// context on every layer, base 150000 (gpt-oss-20b's).
var gptossFixture = GenOptions{Arch: "gpt-oss", Hidden: 256, Layers: 4, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 512, Seed: 53,
	Experts: 16, ExpertsUsed: 4, SlidingWindow: 32, RopeTheta: 150000, YarnFactor: 32, YarnOrigCtx: 4096, MaxPos: 131072}

// TestGptOssLlamaCpp: a gen-model gpt-oss (attention sinks, q/k/v/o
// biases, biased router and experts, softmax over the chosen experts'
// logits, clamped SwiGLU, alternating sliding window, YaRN) is bit-exact
// with llama.cpp from GGUF f16 and q8_0 and from the HF form (transformers'
// fused gate_up_proj / down_proj experts) on 24 prompts of 2-834 tokens,
// 13 of them longer than four windows (checkFamilyFixture).
func TestGptOssLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{opts: gptossFixture,
		runs:  map[string]string{"f16": "llamacpp_gptoss_f16.jsonl", "q8_0": "llamacpp_gptoss_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"}})
}

// TestGptOssConfig: both forms read the same block (experts, window and
// alternating local layers, YaRN, gating, activation, sinks and biases),
// and what llama.cpp's gpt-oss would compute differently is refused by
// name.
func TestGptOssConfig(t *testing.T) {
	o := gptossFixture
	o.DType = "f16"
	g, h := genBoth(t, o)
	wantLocal := []bool{true, false, true, false}
	for name, m := range map[string]*Model{"gguf": g, "hf": h} {
		c := m.Config()
		if c.Arch != "gpt-oss" || c.Experts != 16 || c.ExpertsUsed != 4 || c.FFN != 128 || c.Window != 32 ||
			!slices.Equal(c.LocalLayers, wantLocal) || c.RopeScaling == nil || c.RopeScaling.Type != "yarn" ||
			c.RopeScaling.Factor != 32 || c.RopeScaling.OriginalMaxPos != 4096 || !c.ExpertsSoftmaxTopK || c.ExpertsNorm ||
			c.Act != "swiglu_oai" || !c.AttnSinks || !c.QKVBias || c.TiedEmbeddings {
			t.Errorf("%s: %+v", name, c)
		}
		ly, e := &m.layers[1], &m.layers[1].experts[3]
		if len(ly.sinks) != 4 || len(ly.bo) != 256 || len(ly.gateInpB) != 16 || len(e.gateB) != 128 || len(e.upB) != 128 || len(e.downB) != 256 {
			t.Errorf("%s: sinks %d, bo %d, router bias %d, expert biases %d %d %d", name, len(ly.sinks), len(ly.bo), len(ly.gateInpB),
				len(e.gateB), len(e.upB), len(e.downB))
		}
	}
	// The HF form's experts, split from gate_up_proj and transposed, are
	// the GGUF ones value for value.
	for il := range g.layers {
		for e := range g.layers[il].experts {
			ge, he := &g.layers[il].experts[e], &h.layers[il].experts[e]
			for _, p := range [][2]*tensor.Matrix{{ge.gate, he.gate}, {ge.up, he.up}, {ge.down, he.down}} {
				if !bytes.Equal(p[0].Data, p[1].Data) {
					t.Fatalf("layer %d expert %d: HF and GGUF expert weights differ", il, e)
				}
			}
			if !slices.Equal(ge.gateB, he.gateB) || !slices.Equal(ge.upB, he.upB) || !slices.Equal(ge.downB, he.downB) {
				t.Fatalf("layer %d expert %d: HF and GGUF expert biases differ", il, e)
			}
		}
		if !slices.Equal(g.layers[il].sinks, h.layers[il].sinks) {
			t.Fatalf("layer %d: sinks differ", il)
		}
	}
	for _, tc := range []struct{ edit, want string }{
		{`"swiglu_limit": 8`, "swiglu_limit 8 is not supported"},
		{`"sliding_window": 0`, "sliding_window 0 must be positive"},
		{`"layer_types": ["full_attention", "sliding_attention"]`, "not the alternating sliding/full pattern"},
		{`"quantization_config": {"quant_method": "gptq"}`, `quant_method "gptq" is not supported`},
		{`"num_local_experts": 0`, "must be positive"},
	} {
		raw := []byte(`{"num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": 128, ` + tc.edit + `}`)
		if err := gptossHF(raw, &Config{Layers: 2}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
}

// TestSwigluOAI: ggml_swiglu_oai clamps the gate from above at 7 and the
// up value to [-7, 7] before x*sigmoid(1.702x)*(y+1).
func TestSwigluOAI(t *testing.T) {
	ref := func(x, y float32) float32 { return x / (1 + tensor.Expf(-1.702*x)) * (y + 1) }
	for _, tc := range []struct {
		name       string
		g, u, want float32
	}{
		{"inside the limits", 0.5, -0.25, ref(0.5, -0.25)},
		{"gate above 7 is 7", 10, 1, ref(7, 1)},
		{"gate not clamped from below", -10, 1, ref(-10, 1)},
		{"up above 7 is 7", 1, 9, ref(1, 7)},
		{"up below -7 is -7", 1, -9, ref(1, -7)},
		{"up -1 zeroes", 3, -1, 0},
	} {
		g, u := []float32{tc.g}, []float32{tc.u}
		swigluOAIRow(g, u)
		if g[0] != tc.want {
			t.Errorf("%s: swiglu_oai(%v, %v) = %v, want %v", tc.name, tc.g, tc.u, g[0], tc.want)
		}
	}
}

// TestGptOssMXFP4LlamaCpp: the same model in llama-quantize's MXFP4_MOE
// layout, as gpt-oss's released GGUF files are (MXFP4 experts, which
// llama.cpp repacks to mxfp4_8x8 and multiplies row by row in
// ggml_mul_mat_id, every other matrix q8_0, the f32 router), is bit-exact
// with llama.cpp too.
func TestGptOssMXFP4LlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{opts: gptossFixture,
		runs:  map[string]string{"mxfp4_moe": "llamacpp_gptoss_mxfp4_moe.jsonl"},
		forms: []string{"gguf-mxfp4_moe"}})
}

// TestGptOssMXFP4CheckpointLlamaCpp: the layout of gpt-oss's released
// checkpoints — MXFP4 experts (quantization_config mxfp4,
// gate_up_proj_blocks/_scales, down_proj_blocks/_scales), the rest 16-bit —
// read from the HF form gives llama.cpp's tokens on the GGUF its converter
// writes from such a checkpoint (MXFP4 experts copied, f16 elsewhere), and
// so does that GGUF.
func TestGptOssMXFP4CheckpointLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{opts: gptossFixture,
		runs:  map[string]string{"mxfp4_f16": "llamacpp_gptoss_mxfp4_f16.jsonl"},
		forms: []string{"gguf-mxfp4_f16", "hf-mxfp4_f16"}})
}
