package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// dumpTensor is one tensor of an llh dump (testdata/llamacpp/llh.c).
type dumpTensor struct {
	name string
	data []float32
}

func readDump(path string) ([]dumpTensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []dumpTensor
	for o := 0; o < len(b); {
		if o+100 > len(b) {
			return nil, fmt.Errorf("%s: truncated record at %d", path, o)
		}
		name := strings.TrimRight(string(b[o:o+64]), "\x00")
		n := 1
		for i := 0; i < 4; i++ {
			n *= int(binary.LittleEndian.Uint64(b[o+68+8*i:]))
		}
		if o+100+4*n > len(b) {
			return nil, fmt.Errorf("%s: truncated tensor %s", path, name)
		}
		d := make([]float32, n)
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[o+100+4*i:]))
		}
		out = append(out, dumpTensor{name, d})
		o += 100 + 4*n
	}
	return out, nil
}

// TestLlamaCppTrace is a tool for finding where our numbers leave
// llama.cpp's: it replays a prompt step by step and compares the logits of
// every step, and every intermediate tensor where llh dumped them, bit for
// bit with llama.cpp's (testdata/llamacpp/README.md). It runs when
// LIGHTLLM_LLH_DIR (llh's dump directory for one prompt),
// LIGHTLLM_LLH_TOKENS (that prompt's ids, BOS included) and
// LIGHTLLM_LLH_MODEL are set; LIGHTLLM_LLH_STEPS is the number of decode
// steps to check (default 0: the prompt only).
func TestLlamaCppTrace(t *testing.T) {
	dir, toks, path := os.Getenv("LIGHTLLM_LLH_DIR"), os.Getenv("LIGHTLLM_LLH_TOKENS"), os.Getenv("LIGHTLLM_LLH_MODEL")
	if dir == "" || toks == "" || path == "" {
		t.Skip("set LIGHTLLM_LLH_DIR, LIGHTLLM_LLH_TOKENS and LIGHTLLM_LLH_MODEL to trace against llama.cpp")
	}
	steps, _ := strconv.Atoi(os.Getenv("LIGHTLLM_LLH_STEPS"))
	var prompt []int32
	for _, f := range strings.Fields(toks) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		prompt = append(prompt, int32(v))
	}
	m, err := Load(path, LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type rec struct {
		name string
		data []float32
	}
	var got []rec
	m.trace = func(name string, layer int, data []float32) {
		if layer >= 0 {
			name = fmt.Sprintf("%s-%d", name, layer)
		}
		got = append(got, rec{name, append([]float32(nil), data...)})
	}
	kv := m.NewKV(ctxLen)
	slots := make([]int32, ctxLen)
	for i := range slots {
		slots[i] = int32(i)
	}
	logits := [][]float32{make([]float32, m.Config().Vocab)}
	cur, pos := prompt, 0
	for step := 0; step <= steps && pos+len(cur) <= ctxLen; step++ {
		got = got[:0]
		b := &Batch{Tokens: cur, Seqs: []Seq{{Start: 0, Len: len(cur), Slots: slots[:pos+len(cur)], WantLogits: true}}}
		for i := range cur {
			b.Positions = append(b.Positions, int32(pos+i))
		}
		if err := m.Forward(b, kv, logits); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(fmt.Sprintf("%s/r0_s%d.logits", dir, step))
		if err != nil {
			t.Fatal(err)
		}
		diff := 0
		for i, v := range logits[0] {
			if math.Float32bits(v) != binary.LittleEndian.Uint32(want[4*i:]) {
				diff++
			}
		}
		if diff > 0 {
			t.Errorf("step %d (position %d): %d logits differ", step, pos+len(cur)-1, diff)
		}
		if ref, err := readDump(fmt.Sprintf("%s/r0_s%d.bin", dir, step)); err == nil {
			for _, g := range got {
				// The last tensor of that name is the finished one (after
				// RoPE for Q/K); we may hold only the trailing rows.
				var r []float32
				for _, d := range ref {
					if d.name == g.name {
						r = d.data
					}
				}
				if len(r) < len(g.data) {
					continue
				}
				r = r[len(r)-len(g.data):]
				for i := range r {
					if math.Float32bits(r[i]) != math.Float32bits(g.data[i]) {
						t.Errorf("step %d: %s differs first at %d: %x, llama.cpp %x", step, g.name, i, g.data[i], r[i])
						break
					}
				}
			}
		}
		if t.Failed() {
			return
		}
		pos += len(cur)
		cur = []int32{argmax(logits[0])}
	}
}
