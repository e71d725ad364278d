package model

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestRefTmp(t *testing.T) {
	ref := os.Getenv("REF")
	if ref == "" {
		t.Skip()
	}
	f, _ := os.Open(ref)
	defer f.Close()
	dir := modelsDir(t)
	mp := os.Getenv("MODEL")
	if mp == "" {
		mp = filepath.Join(dir, "stories260K/stories260K-f32.gguf")
	}
	m, err := Load(mp, LoadOptions{Threads: 1, KVType: os.Getenv("KVT")})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Prompt string  `json:"prompt"`
			P      []int32 `json:"prompt_tokens"`
			G      []int32 `json:"generated_tokens"`
		}
		json.Unmarshal(sc.Bytes(), &r)
		got := greedy(t, m, r.P, len(r.G))
		first := -1
		for i := range got {
			if got[i] != r.G[i] {
				first = i
				break
			}
		}
		gap := float32(0)
		if first >= 0 {
			// teacher-forced logits at the mismatch
			seq := append(append([]int32{}, r.P...), r.G[:first]...)
			l := prefillLogits(t, m, seq)
			gap = l[r.G[first]] - l[got[first]]
		}
		fmt.Printf("plen=%d gen=%d firstMismatch=%d gap=%g\n", len(r.P), len(r.G), first, gap)
	}
}
