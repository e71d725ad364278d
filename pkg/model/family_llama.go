package model

// Llama and Mistral: the base decoder block (RMSNorm, RoPE on adjacent
// pairs in llama.cpp's layout, SwiGLU). llama.cpp runs Mistral models as
// llama, and its converter writes them so. Mistral v0.1's config.json
// sliding_window (4096) is ignored as llama.cpp's llama architecture
// ignores it: every layer attends to the whole context.
func init() {
	register(&family{name: "llama", hfClass: "LlamaForCausalLM"})
	register(&family{name: "mistral", ggufArch: "llama", hfClass: "MistralForCausalLM"})
}
