package model

// Qwen2: the llama block with q/k/v biases and NEOX RoPE.
func init() {
	register(&family{name: "qwen2", hfClass: "Qwen2ForCausalLM", ropeNeox: true, qkvBias: true})
}
