package model

// Llama and Mistral: the base decoder block (RMSNorm, RoPE on adjacent
// pairs in llama.cpp's layout, SwiGLU). llama.cpp runs Mistral models as
// llama, and its converter writes them so.
func init() {
	register(&family{name: "llama", hfClass: "LlamaForCausalLM"})
	register(&family{name: "mistral", ggufArch: "llama", hfClass: "MistralForCausalLM"})
}
