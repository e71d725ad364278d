package model

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// TestAgainstLlamaCppOutput compares greedy decoding with a file of
// llama.cpp runs, one JSON object per line as written by
// ../shared/tools/llamacpp-ref/golden.mjs ({"prompt_tokens": [...],
// "generated_tokens": [...]}). It runs only when LIGHTLLM_REF_JSONL and
// LIGHTLLM_REF_MODEL name the runs and the GGUF they came from. Tokens
// past position 512 are not compared (golden.mjs uses a 512-token context).
func TestAgainstLlamaCppOutput(t *testing.T) {
	refPath, modelPath := os.Getenv("LIGHTLLM_REF_JSONL"), os.Getenv("LIGHTLLM_REF_MODEL")
	if refPath == "" || modelPath == "" {
		t.Skip("set LIGHTLLM_REF_JSONL and LIGHTLLM_REF_MODEL to compare with llama.cpp runs")
	}
	m, err := Load(modelPath, LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f, err := os.Open(refPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	runs, bad := 0, 0
	for sc.Scan() {
		var r struct {
			Prompt []int32 `json:"prompt_tokens"`
			Gen    []int32 `json:"generated_tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n := min(len(r.Gen), 512-len(r.Prompt))
		if n <= 0 {
			continue
		}
		runs++
		got := greedy(t, m, r.Prompt, n)
		for i := 0; i < n; i++ {
			if got[i] != r.Gen[i] {
				bad++
				seq := append(append([]int32{}, r.Prompt...), r.Gen[:i]...)
				l := prefillLogits(t, m, seq)
				t.Errorf("prompt of %d tokens: token %d is %d, llama.cpp %d (logit gap %g)",
					len(r.Prompt), i, got[i], r.Gen[i], l[got[i]]-l[r.Gen[i]])
				break
			}
		}
	}
	t.Logf("%d of %d runs match", runs-bad, runs)
}
