package reftest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model"
)

func argmax(v []float32) int32 {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return int32(b)
}

func TestRef(t *testing.T) {
	m, err := model.Load(os.Getenv("MODEL"), model.LoadOptions{Threads: 1, KVType: os.Getenv("KVT"), NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(os.Getenv("REF"))
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	total, bad := 0, 0
	for sc.Scan() {
		var r struct {
			P []int32 `json:"prompt_tokens"`
			G []int32 `json:"generated_tokens"`
		}
		json.Unmarshal(sc.Bytes(), &r)
		n := len(r.P) + len(r.G)
		kv := m.NewKV(n)
		slots := make([]int32, n)
		pos := make([]int32, n)
		for i := range slots {
			slots[i], pos[i] = int32(n-1-i), int32(i)
		}
		out := [][]float32{make([]float32, m.Config().Vocab)}
		m.Forward(&model.Batch{Tokens: r.P, Positions: pos[:len(r.P)], Seqs: []model.Seq{{Start: 0, Len: len(r.P), Slots: slots[:len(r.P)], WantLogits: true}}}, kv, out)
		first := -1
		for i := range r.G {
			if argmax(out[0]) != r.G[i] {
				first = i
				break
			}
			p := len(r.P) + i
			if p >= 512 {
				break
			}
			m.Forward(&model.Batch{Tokens: r.G[i : i+1], Positions: pos[p : p+1], Seqs: []model.Seq{{Start: 0, Len: 1, Slots: slots[:p+1], WantLogits: true}}}, kv, out)
		}
		total++
		if first >= 0 && len(r.P)+first < 512 {
			bad++
			fmt.Printf("plen=%d mismatch at %d\n", len(r.P), first)
		}
	}
	fmt.Printf("%d/%d sequences match\n", total-bad, total)
}
