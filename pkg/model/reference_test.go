package model

import (
	"os"
	"testing"
)

// TestAgainstLlamaCppOutput compares greedy decoding with a file of
// llama.cpp runs, one JSON object per line as written by
// ../shared/tools/llamacpp-ref/golden.mjs ({"prompt_tokens": [...],
// "generated_tokens": [...]}). It runs only when LIGHTLLM_REF_JSONL and
// LIGHTLLM_REF_MODEL name the runs and the GGUF they came from. Tokens
// past the 512-token context golden.mjs uses are not compared.
func TestAgainstLlamaCppOutput(t *testing.T) {
	refPath, modelPath := os.Getenv("LIGHTLLM_REF_JSONL"), os.Getenv("LIGHTLLM_REF_MODEL")
	if refPath == "" || modelPath == "" {
		t.Skip("set LIGHTLLM_REF_JSONL and LIGHTLLM_REF_MODEL to compare with llama.cpp runs")
	}
	m, err := Load(modelPath, LoadOptions{NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	runs := readRuns(t, refPath)
	ok := checkRuns(t, m, runs)
	t.Logf("%d of %d runs match", ok, len(runs))
}
