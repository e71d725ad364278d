package model

// Qwen2: the llama block with q/k/v biases and NEOX RoPE. Like llama.cpp's
// qwen2 architecture, config.json's use_sliding_window / sliding_window
// are not applied (every layer attends to the whole context).
func init() {
	register(&family{name: "qwen2", hfClass: "Qwen2ForCausalLM", ropeNeox: true, qkvBias: true})
}
