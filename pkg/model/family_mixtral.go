package model

import (
	"encoding/json"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Mixtral: the llama block with a mixture of experts in place of the FFN
// (Config.Experts, moe.go). llama.cpp runs it as its llama architecture —
// llama.cpp's converter writes general.architecture llama with
// llama.expert_count / llama.expert_used_count and the experts stacked as
// 3-D ffn_{gate,up,down}_exps tensors (w1, w3, w2) — so a Mixtral GGUF file
// loads as llama; this family reads config.json's MixtralForCausalLM
// (num_local_experts, num_experts_per_tok; its sliding_window is ignored
// as llama.cpp's llama graph ignores it) and names the per-expert
// Hugging Face tensors.
func init() {
	register(&family{name: "mixtral", ggufArch: "llama", hfClass: "MixtralForCausalLM", moe: true,
		hfTensors: map[string]string{
			"ffn_gate_inp":  "block_sparse_moe.gate",
			"ffn_gate_exps": "block_sparse_moe.experts.%d.w1",
			"ffn_down_exps": "block_sparse_moe.experts.%d.w2",
			"ffn_up_exps":   "block_sparse_moe.experts.%d.w3",
		},
		fromHF: mixtralHF, genHF: mixtralGenHF, chatTemplate: mixtralChatTemplate})
}

// mixtralChatTemplate is mistralai/Mixtral-8x7B-Instruct-v0.1's (its
// tokenizer_config.json).
const mixtralChatTemplate = `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}`

func mixtralHF(raw []byte, c *Config) error {
	var hc struct {
		Experts     int `json:"num_local_experts"`
		ExpertsUsed int `json:"num_experts_per_tok"`
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return fmt.Errorf("config.json: %w", err)
	}
	if hc.Experts <= 0 || hc.ExpertsUsed <= 0 {
		return fmt.Errorf("mixtral: num_local_experts %d / num_experts_per_tok %d must be positive", hc.Experts, hc.ExpertsUsed)
	}
	c.Experts, c.ExpertsUsed, c.ExpertsNorm = hc.Experts, hc.ExpertsUsed, true
	return nil
}

func mixtralGenHF(cfg map[string]any, o *GenOptions) {
	cfg["num_local_experts"], cfg["num_experts_per_tok"] = o.Experts, o.ExpertsUsed
	cfg["sliding_window"] = nil
	cfg["router_aux_loss_coef"] = 0.02
}

// genExpertsGGUF writes the expert counts every MoE family's GGUF carries.
func genExpertsGGUF(w *gguf.Writer, arch string, o *GenOptions) {
	w.Set(arch+".expert_count", uint32(o.Experts))
	w.Set(arch+".expert_used_count", uint32(o.ExpertsUsed))
}
