package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Phi-3 (microsoft/Phi-3-mini-4k-instruct and its kin): the llama block
// with q|k|v fused into one projection (attn_qkv / self_attn.qkv_proj) and
// gate|up into another (ffn_up / mlp.gate_up_proj, gate rows first), NEOX
// RoPE, and q multiplied by 1/sqrt(head_dim) before attention as llama.cpp
// does (kq scale 1). Like llama.cpp, the sliding_window of config.json
// and phi3.attention.sliding_window are ignored: every layer attends to the
// whole context (llama.cpp logs "Phi SWA is currently disabled"), so text
// past the window differs from transformers' but matches llama.cpp's.
// LongRoPE (rope_scaling longrope, rope_factors_short/long) and partial
// rotary embeddings are refused by name.
func init() {
	register(&family{name: "phi3", hfClass: "Phi3ForCausalLM", ropeNeox: true, fusedProj: true,
		hfTensors: map[string]string{"attn_qkv": "self_attn.qkv_proj", "ffn_up": "mlp.gate_up_proj"},
		fromHF:    phi3HF, fromGGUF: phi3GGUF, genGGUF: phi3GenGGUF, chatTemplate: phi3ChatTemplate})
}

// phi3QScale is llama.cpp's 1.0f/sqrtf(float(n_embd_head)).
func phi3QScale(c *Config) float32 { return 1 / float32(math.Sqrt(float64(float32(c.HeadDim)))) }

func phi3HF(raw []byte, c *Config) error {
	var hc struct {
		PartialRotary *float64 `json:"partial_rotary_factor"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.PartialRotary != nil && *hc.PartialRotary != 1 {
		return fmt.Errorf("phi3: partial_rotary_factor %v is not supported (1 only)", *hc.PartialRotary)
	}
	c.QScale = phi3QScale(c)
	return nil
}

func phi3GGUF(f *gguf.File, c *Config) error {
	if _, ok := f.Tensor("rope_factors_short.weight"); ok {
		return fmt.Errorf("phi3: LongRoPE (rope_factors_short/long) is not supported")
	}
	c.QScale = phi3QScale(c)
	return nil
}

// phi3GenGGUF names the file so that llama.cpp's vocabulary loader does not
// take it for a real Phi-3 (a name containing "phi3" makes it look for
// <|endoftext|>, which the generated vocabulary lacks).
func phi3GenGGUF(w *gguf.Writer, _ *GenOptions) { w.Set("general.name", "lightllm-random-p3") }

// phi3ChatTemplate is microsoft/Phi-3-mini-4k-instruct's chat template
// (tokenizer_config.json).
const phi3ChatTemplate = "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}" +
	"{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}" +
	"{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}" +
	"{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}"
