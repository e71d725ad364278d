package model

import (
	"encoding/json"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Gemma 2 (google/gemma-2-*: Gemma2ForCausalLM), as llama.cpp's gemma2
// graph computes it: Gemma 3's block (family_gemma3.go) without q/k norms,
// plus soft-capping — attention logits cap*tanh(logit/cap) inside flash
// attention (attn_logit_softcapping, llama.cpp's default 50) and output
// logits the same (final_logit_softcapping, default 30), with glibc's
// tanhf. Sliding-window layers alternate (layer il is local iff il % 2 ==
// 0, GGUF gemma2.attention.sliding_window_pattern otherwise; window
// gemma2.attention.sliding_window, default 4096) and rotate like the
// global ones (rope.freq_base_swa when present). The output head is always
// the embedding table, as llama.cpp's gemma2 reads it (the converter drops
// lm_head).
func init() {
	register(&family{name: "gemma2", hfClass: "Gemma2ForCausalLM", hiddenAct: "gelu_pytorch_tanh",
		ropeNeox: true, normShift: true, postNorms: true, tiedOnly: true, genEmbedStd: 0.003,
		hfTensors: map[string]string{"ffn_norm": "pre_feedforward_layernorm", "post_attention_norm": "post_attention_layernorm",
			"post_ffw_norm": "post_feedforward_layernorm"},
		fromHF: gemma2HF, fromGGUF: gemma2GGUF, genGGUF: gemma2GenGGUF, genHF: gemma2GenHF, chatTemplate: gemma2ChatTemplate})
}

func gemma2HF(raw []byte, c *Config) error {
	var hc struct {
		Act        string   `json:"hidden_activation"`
		QPAS       *float64 `json:"query_pre_attn_scalar"`
		Window     *int     `json:"sliding_window"`
		LayerTypes []string `json:"layer_types"`
		AttnCap    *float64 `json:"attn_logit_softcapping"`
		FinalCap   *float64 `json:"final_logit_softcapping"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.Act != "" && hc.Act != "gelu_pytorch_tanh" {
		return fmt.Errorf("gemma2: hidden_activation %q is not supported (gelu_pytorch_tanh only)", hc.Act)
	}
	if c.RopeScaling != nil {
		return fmt.Errorf("gemma2: rope_scaling is not supported (llama.cpp's converter writes none for gemma2)")
	}
	qpas := c.HeadDim
	if hc.QPAS != nil {
		qpas = int(*hc.QPAS)
		if float64(qpas) != *hc.QPAS || qpas <= 0 {
			return fmt.Errorf("gemma2: query_pre_attn_scalar %v is not a positive integer", *hc.QPAS)
		}
	}
	gemmaBlock(c, qpas)
	if hc.AttnCap != nil {
		c.AttnSoftcap = float32(*hc.AttnCap)
	}
	if hc.FinalCap != nil {
		c.FinalSoftcap = float32(*hc.FinalCap)
	}
	c.Window = 4096
	if hc.Window != nil {
		c.Window = *hc.Window
	}
	if c.Window <= 0 {
		return fmt.Errorf("gemma2: sliding_window %d must be positive", c.Window)
	}
	if len(hc.LayerTypes) > 0 {
		return gemmaLayerTypes(hc.LayerTypes, c)
	}
	c.LocalLayers, _ = swaPattern(c.Layers, 2)
	return nil
}

func gemma2GGUF(f *gguf.File, c *Config) error {
	qpas := c.HeadDim
	if c.Layers == 46 { // llama.cpp's 27B rule
		qpas = c.Hidden / c.Heads
	}
	gemmaBlock(c, qpas)
	c.AttnSoftcap, c.FinalSoftcap = 50, 30
	if v, ok := f.Float("gemma2.attn_logit_softcapping"); ok {
		c.AttnSoftcap = float32(v)
	}
	if v, ok := f.Float("gemma2.final_logit_softcapping"); ok {
		c.FinalSoftcap = float32(v)
	}
	if c.FinalSoftcap == 0 {
		// llama.cpp divides by it unconditionally.
		return fmt.Errorf("gemma2: final_logit_softcapping 0 is not supported (llama.cpp would divide by it)")
	}
	c.Window = 4096
	if v, ok := f.Uint("gemma2.attention.sliding_window"); ok {
		c.Window = int(v)
	}
	if c.Window <= 0 {
		return fmt.Errorf("gemma2: sliding window %d must be positive", c.Window)
	}
	if v, ok := f.Float("gemma2.rope.freq_base_swa"); ok {
		c.RopeThetaLocal = v
	}
	return ggufSWAPattern(f, "gemma2.attention.sliding_window_pattern", 2, c)
}

// gemma2Caps are the soft-caps gen-model writes: GenOptions' own, else
// Gemma 2's.
func gemma2Caps(o *GenOptions) (attn, final float64) {
	attn, final = 50, 30
	if o.AttnSoftcap != 0 {
		attn = o.AttnSoftcap
	}
	if o.FinalSoftcap != 0 {
		final = o.FinalSoftcap
	}
	return attn, final
}

func gemma2GenGGUF(w *gguf.Writer, o *GenOptions) {
	window, pat, _ := gemmaGen(o, 2)
	attnCap, finalCap := gemma2Caps(o)
	w.Set("gemma2.attention.sliding_window", uint32(window))
	if pat != 2 {
		w.Set("gemma2.attention.sliding_window_pattern", uint32(pat))
	}
	w.Set("gemma2.attn_logit_softcapping", float32(attnCap))
	w.Set("gemma2.final_logit_softcapping", float32(finalCap))
}

func gemma2GenHF(cfg map[string]any, o *GenOptions) {
	window, pat, _ := gemmaGen(o, 2)
	delete(cfg, "hidden_act")
	cfg["hidden_activation"] = "gelu_pytorch_tanh"
	cfg["query_pre_attn_scalar"] = o.HeadDim
	cfg["sliding_window"] = window
	cfg["attn_logit_softcapping"], cfg["final_logit_softcapping"] = gemma2Caps(o)
	lt, _ := swaPattern(o.Layers, pat)
	types := make([]string, o.Layers)
	for i, local := range lt {
		types[i] = map[bool]string{true: "sliding_attention", false: "full_attention"}[local]
	}
	cfg["layer_types"] = types
}

// gemma2ChatTemplate is google/gemma-2-2b-it's chat template
// (tokenizer_config.json).
const gemma2ChatTemplate = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}"
