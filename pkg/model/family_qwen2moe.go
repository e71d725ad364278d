package model

import (
	"encoding/json"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Qwen2-MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2's attention (q/k/v
// biases, NEOX RoPE) and in every layer a mixture of experts plus a shared
// expert, as llama.cpp's qwen2moe graph computes them: softmax router,
// top-k weights NOT renormalised (llama.cpp never renormalises for
// qwen2moe, so a config.json with norm_topk_prob true is refused), and a
// shared SwiGLU expert whose output is multiplied by the sigmoid of a gate
// logit (ffn_gate_inp_shexp; llama.cpp computes it as silu(g)/g) and added
// to the experts' sum. Widths: GGUF qwen2moe.expert_feed_forward_length
// (else feed_forward_length / expert_used_count) and
// expert_shared_feed_forward_length (else feed_forward_length); config.json
// moe_intermediate_size and shared_expert_intermediate_size.
func init() {
	register(&family{name: "qwen2moe", hfClass: "Qwen2MoeForCausalLM", hfType: "qwen2_moe", ropeNeox: true, qkvBias: true,
		moe: true, sharedExpert: true,
		hfTensors: map[string]string{
			"ffn_gate_inp":       "mlp.gate",
			"ffn_gate_exps":      "mlp.experts.%d.gate_proj",
			"ffn_up_exps":        "mlp.experts.%d.up_proj",
			"ffn_down_exps":      "mlp.experts.%d.down_proj",
			"ffn_gate_inp_shexp": "mlp.shared_expert_gate",
			"ffn_gate_shexp":     "mlp.shared_expert.gate_proj",
			"ffn_up_shexp":       "mlp.shared_expert.up_proj",
			"ffn_down_shexp":     "mlp.shared_expert.down_proj",
		},
		fromHF: qwen2moeHF, fromGGUF: qwen2moeGGUF, genGGUF: qwen2moeGenGGUF, genHF: qwen2moeGenHF,
		chatTemplate: qwen2ChatTemplate})
}

// qwen2ChatTemplate is the ChatML template of Qwen1.5-MoE-A2.7B-Chat and
// the Qwen2 instruct models (their tokenizer_config.json).
const qwen2ChatTemplate = `{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful assistant.<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %}`

func qwen2moeHF(raw []byte, c *Config) error {
	var hc struct {
		Experts     int   `json:"num_experts"`
		ExpertsUsed int   `json:"num_experts_per_tok"`
		ExpertFFN   int   `json:"moe_intermediate_size"`
		SharedFFN   int   `json:"shared_expert_intermediate_size"`
		NormTopK    bool  `json:"norm_topk_prob"`
		SparseStep  *int  `json:"decoder_sparse_step"`
		MLPOnly     []int `json:"mlp_only_layers"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	switch {
	case hc.Experts <= 0 || hc.ExpertsUsed <= 0 || hc.ExpertFFN <= 0 || hc.SharedFFN <= 0:
		return fmt.Errorf("qwen2moe: num_experts %d, num_experts_per_tok %d, moe_intermediate_size %d, shared_expert_intermediate_size %d must be positive",
			hc.Experts, hc.ExpertsUsed, hc.ExpertFFN, hc.SharedFFN)
	case hc.NormTopK:
		return fmt.Errorf("qwen2moe: norm_topk_prob true is not supported (llama.cpp's qwen2moe never renormalises the chosen experts' weights)")
	case hc.SparseStep != nil && *hc.SparseStep != 1, len(hc.MLPOnly) > 0:
		return fmt.Errorf("qwen2moe: dense layers (decoder_sparse_step %v, mlp_only_layers %v) are not supported (llama.cpp's qwen2moe has none)", hc.SparseStep, hc.MLPOnly)
	}
	c.Experts, c.ExpertsUsed, c.ExpertsNorm, c.FFN, c.SharedFFN = hc.Experts, hc.ExpertsUsed, false, hc.ExpertFFN, hc.SharedFFN
	return nil
}

func qwen2moeGGUF(f *gguf.File, c *Config) error {
	if c.Experts <= 0 || c.ExpertsUsed <= 0 {
		return fmt.Errorf("qwen2moe: expert_count %d / expert_used_count %d must be positive", c.Experts, c.ExpertsUsed)
	}
	c.ExpertsNorm = false
	c.SharedFFN = c.FFN
	if v, ok := f.Uint("qwen2moe.expert_shared_feed_forward_length"); ok && v > 0 {
		c.SharedFFN = int(v)
	}
	if v, ok := f.Uint("qwen2moe.expert_feed_forward_length"); ok && v > 0 {
		c.FFN = int(v)
	} else {
		c.FFN /= c.ExpertsUsed
	}
	return nil
}

func qwen2moeGenGGUF(w *gguf.Writer, o *GenOptions) {
	w.Set("qwen2moe.expert_feed_forward_length", uint32(o.FFN))
	w.Set("qwen2moe.expert_shared_feed_forward_length", uint32(o.SharedFFN))
}

func qwen2moeGenHF(cfg map[string]any, o *GenOptions) {
	cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"] = o.Experts, o.ExpertsUsed, o.FFN
	cfg["shared_expert_intermediate_size"], cfg["norm_topk_prob"] = o.SharedFFN, false
	cfg["decoder_sparse_step"], cfg["mlp_only_layers"] = 1, []int{}
}
