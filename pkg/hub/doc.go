// Package hub resolves model names to local paths: a local HF folder or
// GGUF file is used as is, and a Hugging Face Hub id ("org/name", with an
// optional "@revision" and ":file.gguf") is downloaded into the cache that
// huggingface_hub itself uses, with the same layout, locks and rules, so
// models fetched by Python tools are reused and vice versa.
//
// Downloads fetch only what the engine loads (config.json,
// generation_config.json, tokenizer files, safetensors weights single or
// sharded, or one GGUF file), resume after a cut connection, verify size and
// hash against the Hub's metadata, and are safe to run from several
// processes at once. See Resolve, Options and Cache.
package hub

// DefaultModel is served when no model is given: a small instruct model
// (Llama architecture, one bf16 model.safetensors of about 724 MB, a
// tokenizer.json with a ChatML chat template) that the CPU engine runs at
// interactive speed.
const DefaultModel = "HuggingFaceTB/SmolLM2-360M-Instruct"
