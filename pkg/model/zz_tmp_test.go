package model

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

func TestZZTmp(t *testing.T) {
	b, _ := os.ReadFile("/tmp/ref37.jsonl")
	var r struct {
		P []int32 `json:"prompt_tokens"`
		G []int32 `json:"generated_tokens"`
	}
	json.Unmarshal(b, &r)
	for _, tok := range []bool{true, false} {
		m, err := Load("/work/shared/models/stories260K/stories260K-f32.gguf", LoadOptions{Threads: 1, NoTokenizer: tok})
		if err != nil {
			t.Fatal(err)
		}
		got := greedy(t, m, r.P, 300)
		first := -1
		for i := range got {
			if got[i] != r.G[i] {
				first = i
				break
			}
		}
		fmt.Println("notok", tok, "first mismatch", first)
	}
}
