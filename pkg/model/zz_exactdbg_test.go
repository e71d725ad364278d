package model

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

type dumpT struct {
	name string
	ne   [4]int64
	data []float32
}

func readDump(path string) ([]dumpT, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []dumpT
	for o := 0; o < len(b); {
		name := strings.TrimRight(string(b[o:o+64]), "\x00")
		var ne [4]int64
		for i := range ne {
			ne[i] = int64(binary.LittleEndian.Uint64(b[o+68+8*i:]))
		}
		n := int(ne[0] * ne[1] * ne[2] * ne[3])
		d := make([]float32, n)
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[o+100+4*i:]))
		}
		out = append(out, dumpT{name, ne, d})
		o += 100 + 4*n
	}
	return out, nil
}

// TestTmpExactDbg compares intermediates with llh dumps: LLH_DIR/r0_s*.bin
// made from LLH_TOKENS (space separated, BOS included).
func TestTmpExactDbg(t *testing.T) {
	dir, toks := os.Getenv("LLH_DIR"), os.Getenv("LLH_TOKENS")
	if dir == "" {
		t.Skip("no LLH_DIR")
	}
	steps, _ := strconv.Atoi(os.Getenv("LLH_STEPS"))
	var prompt []int32
	for _, f := range strings.Fields(toks) {
		v, _ := strconv.Atoi(f)
		prompt = append(prompt, int32(v))
	}
	m, err := Load(os.Getenv("LLH_MODEL"), LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type rec struct {
		name  string
		layer int
		data  []float32
	}
	var got []rec
	m.trace = func(name string, layer int, data []float32) {
		got = append(got, rec{name, layer, append([]float32(nil), data...)})
	}
	kv := m.NewKV(512)
	slots := make([]int32, 512)
	for i := range slots {
		slots[i] = int32(i)
	}
	logits := [][]float32{make([]float32, m.Config().Vocab)}
	cur := prompt
	pos := 0
	for step := 0; step <= steps; step++ {
		got = got[:0]
		ps := make([]int32, len(cur))
		for i := range ps {
			ps[i] = int32(pos + i)
		}
		b := &Batch{Tokens: cur, Positions: ps, Seqs: []Seq{{Start: 0, Len: len(cur), Slots: slots[:pos+len(cur)], WantLogits: true}}}
		if err := m.Forward(b, kv, logits); err != nil {
			t.Fatal(err)
		}
		lb, err := os.ReadFile(fmt.Sprintf("%s/r0_s%d.logits", dir, step))
		if err != nil {
			t.Fatal(err)
		}
		nd := 0
		for i := range logits[0] {
			if math.Float32bits(logits[0][i]) != binary.LittleEndian.Uint32(lb[4*i:]) {
				nd++
			}
		}
		if nd > 0 {
			t.Logf("step %d (pos %d): %d logits differ", step, pos, nd)
		}
		ref, err := readDump(fmt.Sprintf("%s/r0_s%d.bin", dir, step))
		if err != nil {
			if nd > 0 {
				return
			}
			tok := argmax(logits[0])
			pos += len(cur)
			cur = []int32{tok}
			continue
		}
		// index reference by name, last occurrence with matching total size preferred
		bad := 0
		for _, g := range got {
			name := g.name
			if g.layer >= 0 {
				name = fmt.Sprintf("%s-%d", g.name, g.layer)
			}
			var cands []dumpT
			for _, r := range ref {
				if r.name == name {
					cands = append(cands, r)
				}
			}
			if len(cands) == 0 {
				t.Logf("step %d: %s not in dump", step, name)
				continue
			}
			// pick the last candidate (after rope for Q/K)
			r := cands[len(cands)-1]

			// compare the trailing rows (we may hold fewer rows)
			n := len(g.data)
			rd := r.data
			if len(rd) < n {
				t.Logf("step %d %s: ours %d ref %d", step, name, n, len(rd))
				continue
			}
			rd = rd[len(rd)-n:]
			diff, maxd := 0, float32(0)
			first := -1
			for i := range rd {
				if math.Float32bits(rd[i]) != math.Float32bits(g.data[i]) {
					diff++
					if first < 0 {
						first = i
					}
					maxd = max(maxd, float32(math.Abs(float64(rd[i]-g.data[i]))))
				}
			}
			if diff > 0 {
				bad++
				if bad <= 6 {
					t.Logf("step %d %s: %d/%d differ (first %d: ours %x ref %x), max %g", step, name, diff, n, first, g.data[first], rd[first], maxd)
				}
			}
		}
		if bad > 0 {
			t.Logf("step %d: %d tensors differ", step, bad)
			return
		}
		tok := argmax(logits[0])
		pos += len(cur)
		cur = []int32{tok}
	}
	t.Logf("all %d steps identical", steps+1)
}

var _ = bufio.NewScanner
