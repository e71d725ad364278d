package model

import (
	"strings"
	"testing"
)

// mixtralFixture is the model of testdata/llamacpp_mixtral_*.jsonl: 20
// experts, 4 used per token — more than one AVX-512 vector of router
// logits, so the router's softmax takes both ggml's vector and scalar
// paths.
var mixtralFixture = GenOptions{Arch: "mixtral", Hidden: 256, Layers: 2, Heads: 4, KVHeads: 2, FFN: 256, Vocab: 512,
	Seed: 29, Experts: 20, ExpertsUsed: 4}

// TestMixtralLlamaCpp: a gen-model Mixtral-style MoE is bit-exact with
// llama.cpp from GGUF f16 and q8_0 (the 3-D expert tensors, loaded as
// llama with llama.expert_count) and from the HF form
// (MixtralForCausalLM, per-expert w1/w2/w3), on 24 prompts of 2-834 tokens
// decoded in shared batches (checkFamilyFixture), with first-token
// log-probabilities within 1e-4.
func TestMixtralLlamaCpp(t *testing.T) {
	checkFamilyFixture(t, familyFixture{
		opts:  mixtralFixture,
		runs:  map[string]string{"f16": "llamacpp_mixtral_f16.jsonl", "q8_0": "llamacpp_mixtral_q8_0.jsonl"},
		forms: []string{"gguf-f16", "gguf-q8_0", "hf-f16"},
	})
}

// TestMixtralConfig: the expert counts come from GGUF llama.expert_count /
// expert_used_count and config.json num_local_experts /
// num_experts_per_tok; other families refuse --experts, and a bad count
// is refused by name.
func TestMixtralConfig(t *testing.T) {
	o := smallOpts("mixtral", "f32")
	o.Experts, o.ExpertsUsed = 6, 3
	g, h := genBoth(t, o)
	for name, c := range map[string]Config{"gguf": g.Config(), "hf": h.Config()} {
		if c.Experts != 6 || c.ExpertsUsed != 3 || !c.ExpertsNorm {
			t.Errorf("%s: experts %d used %d norm %v", name, c.Experts, c.ExpertsUsed, c.ExpertsNorm)
		}
	}
	if c := g.Config(); c.Arch != "llama" {
		t.Errorf("GGUF arch %q, want llama (as llama.cpp's converter writes Mixtral)", c.Arch)
	}
	for _, tc := range []struct {
		arch          string
		experts, used int
		want          string
	}{
		{"llama", 4, 2, "llama has no experts"},
		{"mixtral", 4, 5, "5 experts used of 4"},
		{"mixtral", 2000, 2, "2 experts used of 2000"},
	} {
		o := smallOpts(tc.arch, "f32")
		o.Experts, o.ExpertsUsed = tc.experts, tc.used
		if err := GenerateGGUF(t.TempDir()+"/m.gguf", o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %d/%d: %v, want %q", tc.arch, tc.experts, tc.used, err, tc.want)
		}
	}
}

// TestTopK: the chosen experts are the largest probabilities, largest
// first, equal ones in index order.
func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		p    []float32
		k    int
		want []int32
	}{
		{[]float32{0.1, 0.4, 0.2, 0.3}, 2, []int32{1, 3}},
		{[]float32{0.1, 0.4, 0.2, 0.3}, 4, []int32{1, 3, 2, 0}},
		{[]float32{0.5, 0.1, 0.5, 0.5}, 2, []int32{0, 2}},
		{[]float32{0.1, 0.2, 0.3, 0.4, 0.5}, 1, []int32{4}},
		{[]float32{0.5, 0.4, 0.3, 0.2, 0.1}, 3, []int32{0, 1, 2}},
	} {
		sel := make([]int32, tc.k)
		topK(sel, tc.p)
		if !equalIDs(sel, tc.want) {
			t.Errorf("topK(%v, %d) = %v, want %v", tc.p, tc.k, sel, tc.want)
		}
	}
}

// TestReduceLanes: the tree order of the x86 horizontal adds, which
// differs from a left-to-right sum.
func TestReduceLanes(t *testing.T) {
	v := []float32{1e8, 1, -1e8, 1, 0, 0, 0, 0}
	// ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)) = (1e8 + -1e8) + (1 + 1) = 2
	if got := reduceLanes(v); got != 2 {
		t.Errorf("reduceLanes = %v, want 2", got)
	}
}

// TestMixtralHFNames: the router and the per-expert tensors of a
// MixtralForCausalLM checkpoint.
func TestMixtralHFNames(t *testing.T) {
	f, err := lookupFamily("mixtral")
	if err != nil {
		t.Fatal(err)
	}
	for gg, hf := range map[string]string{
		"blk.1.ffn_gate_inp.weight":     "model.layers.1.block_sparse_moe.gate.weight",
		"blk.1.ffn_gate_exps.7.weight":  "model.layers.1.block_sparse_moe.experts.7.w1.weight",
		"blk.0.ffn_up_exps.0.weight":    "model.layers.0.block_sparse_moe.experts.0.w3.weight",
		"blk.3.ffn_down_exps.12.weight": "model.layers.3.block_sparse_moe.experts.12.w2.weight",
		"blk.3.ffn_down_exps.weight":    "blk.3.ffn_down_exps.weight", // stacked: no single HF tensor
		"blk.2.attn_q.weight":           "model.layers.2.self_attn.q_proj.weight",
	} {
		if got := f.hfName(gg); got != hf {
			t.Errorf("%s -> %s, want %s", gg, got, hf)
		}
	}
}
