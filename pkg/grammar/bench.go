package grammar

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lightllm-go/lightllm/pkg/cputime"
)

// BenchSchema is one schema of a benchmark corpus; its "examples" keyword
// (an annotation) holds instances forced through the mask.
type BenchSchema struct {
	Name   string
	Schema []byte
}

// LoadBenchCorpus reads every *.json file of dir as a schema.
func LoadBenchCorpus(dir string) ([]BenchSchema, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.json schemas in %s", dir)
	}
	var out []BenchSchema
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read corpus: %w", err)
		}
		out = append(out, BenchSchema{strings.TrimSuffix(filepath.Base(f), ".json"), b})
	}
	return out, nil
}

// BenchConfig drives Bench.
type BenchConfig struct {
	Vocab  *Vocab
	Encode func(text string) []int32 // the tokenizer, for the examples
	Corpus []BenchSchema
	// RandomRuns per schema: generations that sample uniformly among the
	// allowed tokens (a random-weight model at temperature 1), up to
	// MaxTokens each.
	RandomRuns int
	MaxTokens  int
	Seed       uint64
	Options    Options
}

// Latency is a distribution summary.
type Latency struct {
	N              int
	P50, P99, P999 time.Duration
	CPUP50, CPUP99 time.Duration
	CPUP999, Max   time.Duration
}

// BenchReport is what Bench measured.
type BenchReport struct {
	Schemas, Refused int
	Refusals         []string
	Mask             Latency // per FillMask call
	TTFM             Latency // compile + first mask, per schema
	Forced           int     // masks that allowed exactly one token
	Tokens           int     // tokens accepted
	RandomStops      int     // random runs that reached EOS within MaxTokens
	RandomRuns       int
	RandomOpen       []string // random runs that hit MaxTokens, with their last bytes
	Slowest          []string // the slowest masks (CPU), for diagnosis
	TTFMs            []string // CPU time to first mask per schema
}

// Bench measures mask and time-to-first-mask latency over a corpus, on
// the calling goroutine locked to one thread (CPU times are that thread's).
func Bench(cfg BenchConfig) (*BenchReport, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	cache := NewCache(len(cfg.Corpus) + 1)
	var maskWall, maskCPU, ttfmWall, ttfmCPU []time.Duration
	rep := &BenchReport{}
	bits := make([]uint64, cfg.Vocab.MaskWords())
	type slow struct {
		cpu  time.Duration
		what string
	}
	var slowest []slow
	where := ""
	timedMask := func(m *Matcher) int {
		w0, c0 := time.Now(), cputime.Thread()
		n := m.FillMask(bits)
		c := cputime.Thread() - c0
		maskCPU = append(maskCPU, c)
		if len(slowest) < 8 || c > slowest[len(slowest)-1].cpu {
			slowest = append(slowest, slow{c, fmt.Sprintf("%v %s after %d tokens (%d allowed)", c, where, m.Accepted(), n)})
			slices.SortFunc(slowest, func(a, b slow) int { return int(b.cpu - a.cpu) })
			slowest = slowest[:min(len(slowest), 8)]
		}
		maskWall = append(maskWall, time.Since(w0))
		if n == 1 {
			rep.Forced++
		}
		return n
	}
	for _, sc := range cfg.Corpus {
		rep.Schemas++
		w0, c0 := time.Now(), cputime.Thread()
		g, err := cache.Compile(Spec{Kind: KindJSONSchema, Text: string(sc.Schema)}, cfg.Options)
		if err != nil {
			rep.Refused++
			rep.Refusals = append(rep.Refusals, fmt.Sprintf("%s: %v", sc.Name, err))
			continue
		}
		compiled := cputime.Thread() - c0
		m := NewMatcher(g, cfg.Vocab)
		m.FillMask(bits)
		ttfmCPU = append(ttfmCPU, cputime.Thread()-c0)
		rep.TTFMs = append(rep.TTFMs, fmt.Sprintf("%s %v (compile %v, %d rules)", sc.Name, ttfmCPU[len(ttfmCPU)-1],
			compiled, g.Rules()))
		ttfmWall = append(ttfmWall, time.Since(w0))

		root, err := parseJSON(sc.Schema)
		if err != nil {
			return nil, err
		}
		if ex := root.get("examples"); ex != nil && cfg.Encode != nil {
			for i, inst := range ex.arr {
				text := spacedJSON(inst)
				where = fmt.Sprintf("%s example %d", sc.Name, i)
				m := NewMatcher(g, cfg.Vocab)
				for _, id := range cfg.Encode(text) {
					timedMask(m)
					if !maskAllows(bits, id) {
						return nil, fmt.Errorf("%s example %d: token %q of %s not allowed", sc.Name, i, cfg.Vocab.TokenBytes(id), text)
					}
					if err := m.Accept(id); err != nil {
						return nil, fmt.Errorf("%s example %d: %w", sc.Name, i, err)
					}
					rep.Tokens++
				}
				timedMask(m)
				if !m.IsAccepting() {
					return nil, fmt.Errorf("%s example %d: %s is incomplete for the grammar", sc.Name, i, text)
				}
			}
		}
		for r := 0; r < cfg.RandomRuns; r++ {
			rep.RandomRuns++
			where = fmt.Sprintf("%s random %d", sc.Name, r)
			m := NewMatcher(g, cfg.Vocab)
			var text []byte
			stopped := false
			for step := 0; step < cfg.MaxTokens; step++ {
				n := timedMask(m)
				if n == 0 {
					return nil, fmt.Errorf("%s: dead end after %d tokens", sc.Name, step)
				}
				k := rng.IntN(n)
				var pick int32 = -1
				for w, x := range bits {
					for x != 0 {
						if k == 0 {
							pick = int32(w*64 + trailingZeros(x))
							break
						}
						k--
						x &= x - 1
					}
					if pick >= 0 {
						break
					}
				}
				if err := m.Accept(pick); err != nil {
					return nil, fmt.Errorf("%s: mask allowed a token Accept refuses: %w", sc.Name, err)
				}
				rep.Tokens++
				text = append(text, cfg.Vocab.TokenBytes(pick)...)
				if m.Done() {
					rep.RandomStops++
					stopped = true
					break
				}
			}
			if !stopped {
				rep.RandomOpen = append(rep.RandomOpen, fmt.Sprintf("%s random %d: %d bytes, ends %q", sc.Name, r, len(text), text[max(0, len(text)-80):]))
			}
		}
	}
	for _, s := range slowest {
		rep.Slowest = append(rep.Slowest, s.what)
	}
	rep.Mask = summarize(maskWall, maskCPU)
	rep.TTFM = summarize(ttfmWall, ttfmCPU)
	return rep, nil
}

func summarize(wall, cpu []time.Duration) Latency {
	q := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, int(p*float64(len(d))))]
	}
	slices.Sort(wall)
	slices.Sort(cpu)
	l := Latency{N: len(wall), P50: q(wall, 0.5), P99: q(wall, 0.99), P999: q(wall, 0.999),
		CPUP50: q(cpu, 0.5), CPUP99: q(cpu, 0.99), CPUP999: q(cpu, 0.999)}
	if len(wall) > 0 {
		l.Max = wall[len(wall)-1]
	}
	return l
}

// spacedJSON writes v as models usually do: ", " and ": " separators,
// members in document order, canonical scalars.
func spacedJSON(v *jv) string {
	var sb strings.Builder
	var w func(v *jv)
	w = func(v *jv) {
		switch v.kind {
		case 'a':
			sb.WriteByte('[')
			for i, e := range v.arr {
				if i > 0 {
					sb.WriteString(", ")
				}
				w(e)
			}
			sb.WriteByte(']')
		case 'o':
			sb.WriteByte('{')
			for i, m := range v.obj {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(quoteJSON(m.key))
				sb.WriteString(": ")
				w(m.val)
			}
			sb.WriteByte('}')
		default:
			sb.WriteString(canonical(v))
		}
	}
	w(v)
	return sb.String()
}
