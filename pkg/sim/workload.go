package sim

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
)

// Item is one request of a workload. Output is the true output length: the
// simulator hides it from the scheduler until the request's EOS step.
type Item struct {
	Input   int
	Output  int
	Arrival float64 // seconds from the start
	// MaxNew is the request's max_new_tokens (>= Output).
	MaxNew int
}

// Built-in distributions, matching the Past-Future paper's artifact.
const (
	DistDecodeHeavy  = "dist1"         // input 32–4096, output 2048–4096
	DistBalanced     = "dist2"         // input and output 3000–5000
	DistPrefillHeavy = "dist3"         // input 2048–4096, output 32–4096
	DistShareGPTLike = "sharegpt-like" // heavy-tailed (log-normal) input and output
)

// DistNames lists the built-in distributions.
func DistNames() []string {
	return []string{DistDecodeHeavy, DistBalanced, DistPrefillHeavy, DistShareGPTLike}
}

// ErrBadWorkload reports an unknown distribution or an invalid trace.
var ErrBadWorkload = errors.New("sim: bad workload")

type uniformDist struct{ inLo, inHi, outLo, outHi, maxNew int }

var uniformDists = map[string]uniformDist{
	DistDecodeHeavy:  {32, 4096, 2048, 4096, 4096},
	DistBalanced:     {3000, 5000, 3000, 5000, 5000},
	DistPrefillHeavy: {2048, 4096, 32, 4096, 4096},
}

// ShareGPT-like shape: log-normal lengths with long tails, clipped the way
// serving benchmarks clip ShareGPT (prompt ≤ 8k, output ≤ max_new_tokens).
const (
	sgInMedian, sgInSigma, sgInMin, sgInMax     = 512.0, 1.0, 16, 8192
	sgOutMedian, sgOutSigma, sgOutMin, sgMaxNew = 300.0, 1.2, 8, 4096
)

// Dist generates n requests from a built-in distribution. rate > 0 spaces
// arrivals as a Poisson process of that many requests per second; rate 0
// makes every request arrive at time 0 (the artifact's overload setting).
func Dist(name string, n int, seed uint64, rate float64) ([]Item, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d requests", ErrBadWorkload, n)
	}
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("%w: rate %v", ErrBadWorkload, rate)
	}
	rng := rand.New(rand.NewPCG(seed, 0xd157_0001))
	between := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	logNormal := func(median, sigma float64, lo, hi int) int {
		v := int(math.Round(median * math.Exp(sigma*rng.NormFloat64())))
		return min(max(v, lo), hi)
	}
	items := make([]Item, n)
	t := 0.0
	u, isUniform := uniformDists[name]
	if !isUniform && name != DistShareGPTLike {
		return nil, fmt.Errorf("%w: unknown distribution %q (want one of %s)", ErrBadWorkload, name, strings.Join(DistNames(), ", "))
	}
	for i := range items {
		if rate > 0 {
			t += rng.ExpFloat64() / rate
		}
		it := Item{Arrival: t}
		if isUniform {
			it.Input, it.Output, it.MaxNew = between(u.inLo, u.inHi), between(u.outLo, u.outHi), u.maxNew
		} else {
			it.Input = logNormal(sgInMedian, sgInSigma, sgInMin, sgInMax)
			it.Output = logNormal(sgOutMedian, sgOutSigma, sgOutMin, sgMaxNew)
			it.MaxNew = sgMaxNew
		}
		items[i] = it
	}
	return items, nil
}

type traceLine struct {
	InputLen     *int     `json:"input_len"`
	OutputLen    *int     `json:"output_len"`
	ArrivalS     *float64 `json:"arrival_s"`
	MaxNewTokens *int     `json:"max_new_tokens"`
}

// ReadTrace parses JSONL lines {"input_len", "output_len", "arrival_s"} and
// an optional "max_new_tokens" (default: the trace's largest output_len).
// Blank lines are skipped; requests are returned in arrival order.
func ReadTrace(r io.Reader) ([]Item, error) {
	var items []Item
	var explicit []bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	maxOut := 0
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var tl traceLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrBadWorkload, ln, err)
		}
		switch {
		case tl.InputLen == nil || tl.OutputLen == nil || tl.ArrivalS == nil:
			return nil, fmt.Errorf("%w: line %d: need input_len, output_len and arrival_s", ErrBadWorkload, ln)
		case *tl.InputLen < 1 || *tl.OutputLen < 1:
			return nil, fmt.Errorf("%w: line %d: input_len %d and output_len %d must be >= 1", ErrBadWorkload, ln, *tl.InputLen, *tl.OutputLen)
		case *tl.ArrivalS < 0 || math.IsNaN(*tl.ArrivalS) || math.IsInf(*tl.ArrivalS, 0):
			return nil, fmt.Errorf("%w: line %d: arrival_s %v", ErrBadWorkload, ln, *tl.ArrivalS)
		case tl.MaxNewTokens != nil && *tl.MaxNewTokens < *tl.OutputLen:
			return nil, fmt.Errorf("%w: line %d: max_new_tokens %d < output_len %d", ErrBadWorkload, ln, *tl.MaxNewTokens, *tl.OutputLen)
		}
		it := Item{Input: *tl.InputLen, Output: *tl.OutputLen, Arrival: *tl.ArrivalS}
		if tl.MaxNewTokens != nil {
			it.MaxNew = *tl.MaxNewTokens
		}
		maxOut = max(maxOut, it.Output)
		items = append(items, it)
		explicit = append(explicit, tl.MaxNewTokens != nil)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadWorkload, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: empty trace", ErrBadWorkload)
	}
	for i := range items {
		if !explicit[i] {
			items[i].MaxNew = maxOut
		}
	}
	slices.SortStableFunc(items, func(a, b Item) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	return items, nil
}

// LoadTrace reads a JSONL trace file.
func LoadTrace(path string) ([]Item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	items, err := ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	return items, nil
}
