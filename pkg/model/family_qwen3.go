package model

// Qwen3: the llama block with per-head q/k RMSNorm (no biases) and NEOX
// RoPE.
func init() {
	register(&family{name: "qwen3", hfClass: "Qwen3ForCausalLM", ropeNeox: true, qkNorm: true})
}
