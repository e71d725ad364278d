package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SLO holds goodput targets; a zero field is not checked.
type SLO struct {
	TTFT, TPOT, E2EL time.Duration
}

func (s SLO) set() bool { return s.TTFT > 0 || s.TPOT > 0 || s.E2EL > 0 }

// ParseGoodput parses vLLM-style "ttft:MS" "tpot:MS" "e2el:MS" arguments.
func ParseGoodput(args []string) (SLO, error) {
	var s SLO
	for _, a := range args {
		for _, part := range strings.Fields(strings.ReplaceAll(a, ",", " ")) {
			k, v, ok := strings.Cut(part, ":")
			if !ok {
				return SLO{}, fmt.Errorf("goodput %q: want KEY:MS with KEY one of ttft, tpot, e2el", part)
			}
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil || ms <= 0 || math.IsInf(ms, 0) {
				return SLO{}, fmt.Errorf("goodput %q: want a positive number of milliseconds", part)
			}
			d := time.Duration(ms * float64(time.Millisecond))
			switch strings.ToLower(k) {
			case "ttft":
				s.TTFT = d
			case "tpot":
				s.TPOT = d
			case "e2el":
				s.E2EL = d
			default:
				return SLO{}, fmt.Errorf("goodput %q: unknown metric %q (ttft, tpot, e2el)", part, k)
			}
		}
	}
	return s, nil
}

// Stats summarises a latency distribution in milliseconds.
type Stats struct {
	Mean, Median, P90, P99 float64
	N                      int
}

// percentile is numpy's default (linear interpolation) on sorted xs.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	h := float64(len(sorted)-1) * p / 100
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func summarize(ms []float64) Stats {
	if len(ms) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Stats{
		Mean: sum / float64(len(s)), Median: percentile(s, 50),
		P90: percentile(s, 90), P99: percentile(s, 99), N: len(s),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// tpot is (E2EL - TTFT) / (output - 1); 0 when there is no second token.
func (r *Result) tpot() time.Duration {
	if r.OutputLen <= 1 {
		return 0
	}
	return (r.Latency - r.TTFT) / time.Duration(r.OutputLen-1)
}

// Metrics is what a run measured.
type Metrics struct {
	Duration                    time.Duration
	Completed, Failed, Canceled int
	TotalInput, TotalOutput     int
	RequestThroughput           float64 // req/s
	OutputThroughput            float64 // tok/s
	TotalTokenThroughput        float64 // tok/s
	PeakOutputThroughput        float64 // tok/s in the busiest 1 s window (the whole run if shorter)
	PeakConcurrency             int
	Goodput                     float64 // req/s meeting every SLO (when set)
	GoodCompleted               int
	TTFT, TPOT, ITL, E2EL       Stats
	Timeline                    []Bucket
	FirstError                  string
	ErrorCounts                 []ErrorCount
	ServerPromptCounts          bool // input tokens as the server counted them
	// TotalCached is the prompt tokens the server reported serving from its
	// prefix cache, over the completed requests that reported a count
	// (ServerCacheCounts: at least one did).
	TotalCached       int
	ServerCacheCounts bool
}

// ErrorCount is one distinct error and how often it occurred.
type ErrorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

// Bucket is one second of the run for the throughput-over-time plot.
type Bucket struct {
	Start        time.Duration
	OutputTokens float64 // tokens that arrived in this second
	InFlight     int     // most requests in flight during it
	Completed    int     // requests finished in it
}

// Compute derives the report numbers from per-request results (vLLM's
// calculate_metrics, plus peak concurrency and a per-second timeline).
func Compute(results []*Result, duration time.Duration, slo SLO) Metrics {
	m := Metrics{Duration: duration}
	errCount := map[string]int{}
	serverPrompts := true
	var ttft, tpot, e2el, itl []float64
	for _, r := range results {
		switch {
		case r == nil:
		case r.Success:
			m.Completed++
			m.TotalInput += r.PromptLen
			m.TotalOutput += r.OutputLen
			serverPrompts = serverPrompts && r.serverPrompt
			if r.CachedKnown {
				m.TotalCached += r.CachedTokens
				m.ServerCacheCounts = true
			}
			ttft = append(ttft, ms(r.TTFT))
			e2el = append(e2el, ms(r.Latency))
			if r.OutputLen > 1 {
				tpot = append(tpot, ms(r.tpot()))
			}
			for _, d := range r.ITL {
				itl = append(itl, ms(d))
			}
			if slo.set() && (slo.TTFT == 0 || r.TTFT <= slo.TTFT) && (slo.TPOT == 0 || r.tpot() <= slo.TPOT) &&
				(slo.E2EL == 0 || r.Latency <= slo.E2EL) {
				m.GoodCompleted++
			}
		case r.Canceled:
			m.Canceled++
		default:
			m.Failed++
			if m.FirstError == "" {
				m.FirstError = r.Err
			}
			if errCount[r.Err] == 0 {
				m.ErrorCounts = append(m.ErrorCounts, ErrorCount{Error: r.Err})
			}
			errCount[r.Err]++
		}
	}
	m.ServerPromptCounts = serverPrompts && m.Completed > 0
	for i := range m.ErrorCounts {
		m.ErrorCounts[i].Count = errCount[m.ErrorCounts[i].Error]
	}
	sort.SliceStable(m.ErrorCounts, func(i, j int) bool { return m.ErrorCounts[i].Count > m.ErrorCounts[j].Count })
	m.TTFT, m.TPOT, m.ITL, m.E2EL = summarize(ttft), summarize(tpot), summarize(itl), summarize(e2el)
	if secs := duration.Seconds(); secs > 0 {
		m.RequestThroughput = float64(m.Completed) / secs
		m.OutputThroughput = float64(m.TotalOutput) / secs
		m.TotalTokenThroughput = float64(m.TotalInput+m.TotalOutput) / secs
		m.Goodput = float64(m.GoodCompleted) / secs
	}
	m.Timeline, m.PeakConcurrency = timeline(results, duration)
	m.PeakOutputThroughput = peakThroughput(results, duration)
	return m
}

// peakThroughput is the most output tokens/s over any window of one second
// within the run, sliding rather than on the timeline's fixed seconds. A
// run shorter than a second is one window as long as the run: counting
// its tokens per fixed second would report fewer tokens/s than the mean
// (300 tokens in 0.3 s read as 300 tok/s, not 1000), and a short trailing
// second would read low as well.
func peakThroughput(results []*Result, duration time.Duration) float64 {
	w := min(time.Second, duration)
	if w <= 0 {
		return 0
	}
	type arrival struct {
		at     time.Duration
		tokens float64
	}
	var arr []arrival
	for _, r := range results {
		if r == nil || !r.Success || len(r.Chunks) == 0 {
			continue
		}
		per := float64(r.OutputLen) / float64(len(r.Chunks))
		for _, c := range r.Chunks {
			arr = append(arr, arrival{min(max(c, 0), duration), per})
		}
	}
	sort.Slice(arr, func(i, j int) bool { return arr[i].at < arr[j].at })
	// The busiest window can be slid right until its start meets an
	// arrival or its end meets the end of the run: those starts suffice,
	// and they never decrease, so two cursors keep the window's sum.
	best, sum, lo, hi := 0.0, 0.0, 0, 0
	for _, a := range arr {
		start := min(a.at, duration-w)
		for hi < len(arr) && arr[hi].at <= start+w {
			sum += arr[hi].tokens
			hi++
		}
		for lo < hi && arr[lo].at < start {
			sum -= arr[lo].tokens
			lo++
		}
		best = max(best, sum)
	}
	return best / w.Seconds()
}

// timeline buckets token arrivals and concurrency per second, and finds
// the peak number of requests in flight at once.
func timeline(results []*Result, duration time.Duration) ([]Bucket, int) {
	n := int(duration/time.Second) + 1
	b := make([]Bucket, n)
	for i := range b {
		b[i].Start = time.Duration(i) * time.Second
	}
	idx := func(t time.Duration) int { return min(max(int(t/time.Second), 0), n-1) }
	type edge struct {
		at    time.Duration
		delta int
	}
	var edges []edge
	for _, r := range results {
		if r == nil {
			continue
		}
		edges = append(edges, edge{r.Sent, +1}, edge{r.End, -1})
		if r.Success {
			b[idx(r.End)].Completed++
			per := float64(r.OutputLen) / float64(len(r.Chunks))
			for _, c := range r.Chunks {
				b[idx(c)].OutputTokens += per
			}
		}
	}
	// Ends sort before starts at the same instant: back-to-back requests
	// do not overlap.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	cur, peak, k := 0, 0, 0
	for _, e := range edges {
		for k < idx(e.at) { // buckets the sweep passes keep the level
			k++
			b[k].InFlight = max(b[k].InFlight, cur)
		}
		cur += e.delta
		peak = max(peak, cur)
		b[k].InFlight = max(b[k].InFlight, cur)
	}
	return b, peak
}
