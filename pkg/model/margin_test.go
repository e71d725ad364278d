package model

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
)

func TestMarginTmp(t *testing.T) {
	dir := modelsDir(t)
	g := readGolden(t, dir)
	for _, kvt := range []string{"f32", "f16"} {
		m, err := Load(filepath.Join(dir, "stories260K/stories260K-f32.gguf"), LoadOptions{Threads: 1, KVType: kvt})
		if err != nil {
			t.Fatal(err)
		}
		seq := append([]int32{1}, g.GeneratedTokens...)
		kv := m.NewKV(len(seq))
		slots := make([]int32, len(seq))
		for i := range slots {
			slots[i] = int32(i)
		}
		logits := [][]float32{make([]float32, 512)}
		type mg struct {
			i   int
			gap float32
		}
		var gaps []mg
		for i := 0; i < len(seq)-1; i++ {
			b := &Batch{Tokens: seq[i : i+1], Positions: []int32{int32(i)}, Seqs: []Seq{{0, 1, slots[:i+1], true}}}
			if err := m.Forward(b, kv, logits); err != nil {
				t.Fatal(err)
			}
			l := logits[0]
			want := seq[i+1]
			best := float32(-1e30)
			for j, v := range l {
				if int32(j) != want && v > best {
					best = v
				}
			}
			gaps = append(gaps, mg{i, l[want] - best})
		}
		sort.Slice(gaps, func(a, b int) bool { return gaps[a].gap < gaps[b].gap })
		fmt.Println(kvt, gaps[:6])
		m.Close()
	}
}
