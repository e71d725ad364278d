package model

import (
	"encoding/json"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// OLMoE (allenai/OLMoE-1B-7B): the llama block with NEOX RoPE, RMSNorms of
// the whole q and k vectors (not per head) before RoPE, and a mixture of
// experts in every layer, as llama.cpp's olmoe graph computes it: softmax
// router, top-k weights NOT renormalised (llama.cpp never renormalises for
// olmoe, so config.json norm_topk_prob true is refused), no shared expert.
// llama.cpp's converter writes rms_norm_eps 1e-5 whatever config.json
// says, so the HF form uses 1e-5 too; clip_qkv, which llama.cpp's olmoe
// does not apply, is refused.
func init() {
	register(&family{name: "olmoe", hfClass: "OlmoeForCausalLM", ropeNeox: true, qkNorm: true, qkNormFull: true, moe: true,
		hfTensors: map[string]string{
			"ffn_gate_inp":  "mlp.gate",
			"ffn_gate_exps": "mlp.experts.%d.gate_proj",
			"ffn_up_exps":   "mlp.experts.%d.up_proj",
			"ffn_down_exps": "mlp.experts.%d.down_proj",
		},
		fromHF: olmoeHF, fromGGUF: olmoeGGUF, genHF: olmoeGenHF, chatTemplate: olmoeChatTemplate})
}

// olmoeChatTemplate is allenai/OLMoE-1B-7B-0924-Instruct's (Tulu's
// template, its tokenizer_config.json).
const olmoeChatTemplate = `{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}{{ '<|system|>
' + message['content'] + '
' }}{% elif message['role'] == 'user' %}{{ '<|user|>
' + message['content'] + '
' }}{% elif message['role'] == 'assistant' %}{% if not loop.last %}{{ '<|assistant|>
'  + message['content'] + eos_token + '
' }}{% else %}{{ '<|assistant|>
'  + message['content'] + eos_token }}{% endif %}{% endif %}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>
' }}{% endif %}{% endfor %}`

func olmoeHF(raw []byte, c *Config) error {
	var hc struct {
		Experts     int      `json:"num_experts"`
		ExpertsUsed int      `json:"num_experts_per_tok"`
		NormTopK    bool     `json:"norm_topk_prob"`
		ClipQKV     *float64 `json:"clip_qkv"`
		Bias        bool     `json:"attention_bias"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	switch {
	case hc.Experts <= 0 || hc.ExpertsUsed <= 0:
		return fmt.Errorf("olmoe: num_experts %d / num_experts_per_tok %d must be positive", hc.Experts, hc.ExpertsUsed)
	case hc.NormTopK:
		return fmt.Errorf("olmoe: norm_topk_prob true is not supported (llama.cpp's olmoe never renormalises the chosen experts' weights)")
	case hc.ClipQKV != nil:
		return fmt.Errorf("olmoe: clip_qkv %v is not supported (llama.cpp's olmoe does not clip)", *hc.ClipQKV)
	case hc.Bias:
		return fmt.Errorf("olmoe: attention_bias is not supported (llama.cpp's olmoe has no attention biases)")
	}
	c.Experts, c.ExpertsUsed, c.ExpertsNorm, c.RMSEps = hc.Experts, hc.ExpertsUsed, false, 1e-5
	return nil
}

func olmoeGGUF(_ *gguf.File, c *Config) error {
	if c.Experts <= 0 || c.ExpertsUsed <= 0 {
		return fmt.Errorf("olmoe: expert_count %d / expert_used_count %d must be positive", c.Experts, c.ExpertsUsed)
	}
	c.ExpertsNorm = false
	return nil
}

func olmoeGenHF(cfg map[string]any, o *GenOptions) {
	cfg["num_experts"], cfg["num_experts_per_tok"], cfg["norm_topk_prob"], cfg["clip_qkv"] = o.Experts, o.ExpertsUsed, false, nil
}
