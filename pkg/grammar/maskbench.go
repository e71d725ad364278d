package grammar

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/lightllm-go/lightllm/pkg/cputime"
)

// MaskBenchRecord is one schema of a MaskBench corpus (guidance-ai's
// jsonschemabench, maskbench/data, as JSON lines: scripts/maskbench-prep.py
// writes them): the schema's text and its test instances, each as the
// text MaskBench's runner forces through the mask (Python's json.dumps).
type MaskBenchRecord struct {
	ID     string `json:"id"`
	Schema string `json:"schema"`
	Tests  []struct {
		Text  string `json:"text"`
		Valid bool   `json:"valid"`
	} `json:"tests"`
}

// MaskBenchReport counts as MaskBench's runner does: a schema passes when
// it compiles and every test is decided right — a valid instance's tokens
// and then EOS all allowed, an invalid one stopped at some token or at EOS.
type MaskBenchReport struct {
	Schemas, Refused, Passing     int
	Tests, ValidRejected          int
	InvalidAccepted               int
	Mask, TTFM                    Latency
	RefusedBy                     map[string]int // refusal message (cut to 100 bytes) → schemas
	InvalidAcceptedIDs, SlowTTFMs []string
}

// MaskBench runs the records of r through one Vocab and a Cache, as the
// server compiles, on the calling goroutine locked to its thread.
func MaskBench(r io.Reader, v *Vocab, encode func(string) []int32, opts Options) (*MaskBenchReport, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cache := NewCache(16)
	bits := make([]uint64, v.MaskWords())
	eos := v.EOS()
	if len(eos) == 0 {
		return nil, fmt.Errorf("maskbench: the vocabulary has no EOS token")
	}
	rep := &MaskBenchReport{RefusedBy: map[string]int{}}
	var maskWall, maskCPU, ttfmWall, ttfmCPU []time.Duration
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<28)
	for line := 1; sc.Scan(); line++ {
		var rec MaskBenchRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("maskbench: line %d: %w", line, err)
		}
		rep.Schemas++
		w0, c0 := time.Now(), cputime.Thread()
		g, err := cache.Compile(Spec{Kind: KindJSONSchema, Text: rec.Schema}, opts)
		if err != nil {
			rep.Refused++
			msg := err.Error()
			rep.RefusedBy[msg[:min(len(msg), 100)]]++
			continue
		}
		NewMatcher(g, v).FillMask(bits)
		ttfmCPU = append(ttfmCPU, cputime.Thread()-c0)
		ttfmWall = append(ttfmWall, time.Since(w0))
		if ttfmWall[len(ttfmWall)-1] > 15*time.Millisecond {
			rep.SlowTTFMs = append(rep.SlowTTFMs, fmt.Sprintf("%s %v", rec.ID, ttfmWall[len(ttfmWall)-1]))
		}
		pass := true
		for _, tc := range rec.Tests {
			rep.Tests++
			m := NewMatcher(g, v)
			accepted := true
			for _, id := range encode(tc.Text) {
				w0, c0 := time.Now(), cputime.Thread()
				m.FillMask(bits)
				ok := maskAllows(bits, id)
				if ok {
					if err := m.Accept(id); err != nil {
						return nil, fmt.Errorf("maskbench: %s: the mask allowed a token Accept refuses: %w", rec.ID, err)
					}
				}
				maskCPU = append(maskCPU, cputime.Thread()-c0)
				maskWall = append(maskWall, time.Since(w0))
				if !ok {
					accepted = false
					break
				}
			}
			if accepted {
				m.FillMask(bits)
				accepted = maskAllows(bits, eos[0])
			}
			switch {
			case tc.Valid && !accepted:
				rep.ValidRejected++
				pass = false
			case !tc.Valid && accepted:
				rep.InvalidAccepted++
				rep.InvalidAcceptedIDs = append(rep.InvalidAcceptedIDs, rec.ID)
				pass = false
			}
		}
		if pass {
			rep.Passing++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("maskbench: %w", err)
	}
	rep.Mask = summarize(maskWall, maskCPU)
	rep.TTFM = summarize(ttfmWall, ttfmCPU)
	return rep, nil
}
