package apiserver

import (
	"slices"
	"sync"
	"time"
)

// statsWindow is how far back the status page's numbers reach: the
// generation-rate chart, the latency percentiles and the prompt-cache hit
// rate. They live in this process, so a restart of the apiserver starts
// them afresh (the Prometheus histograms of the metric role keep the long
// view).
const statsWindow = 300 // seconds

// Sample capacities bound memory and the sort a status poll costs; past
// them the oldest samples of the window are dropped first.
const (
	maxTTFTSamples = 4096
	maxITLSamples  = 16384
)

// liveStats is what the status page shows of the traffic this server
// answered: generated tokens per second, time to first token, the gaps
// between tokens of one sequence, the prompt-cache hit rate and request
// outcomes. Health probes are left out, as from the Observer. Safe for
// concurrent use; every method is a few stores under one mutex.
type liveStats struct {
	mu sync.Mutex
	// Per-second buckets, bucket sec%statsWindow holding second sec.
	sec      [statsWindow]int64
	tokens   [statsWindow]int64
	prompt   [statsWindow]int64 // prompt tokens of requests finished that second
	cached   [statsWindow]int64 // of which the prompt cache served
	ttft     sampleRing
	itl      sampleRing
	admitted int64
	finished int64
	// cancelled: ended before every sequence finished (client gone, Stop
	// pressed, a write error).
	cancelled int64
	failed    int64 // finished with an error reason
}

func newLiveStats() *liveStats {
	return &liveStats{ttft: newSampleRing(maxTTFTSamples), itl: newSampleRing(maxITLSamples)}
}

// bucket returns second now's index, clearing a bucket that holds an
// older second. Called with mu held.
func (l *liveStats) bucket(now time.Time) int {
	s := now.Unix()
	i := int(s % statsWindow)
	if l.sec[i] != s {
		l.sec[i], l.tokens[i], l.prompt[i], l.cached[i] = s, 0, 0, 0
	}
	return i
}

func (l *liveStats) admit() {
	l.mu.Lock()
	l.admitted++
	l.mu.Unlock()
}

// token records one generated token at now; gap is the time since the
// previous token of the same sequence (0 for its first token).
func (l *liveStats) token(now time.Time, gap time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens[l.bucket(now)]++
	if gap > 0 {
		l.itl.add(now, gap)
	}
}

// done records a group that ended: complete (every sequence finished) or
// cut short.
func (l *liveStats) done(now time.Time, complete, failed bool, firstToken time.Duration, prompt, cached int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !complete:
		l.cancelled++
	case failed:
		l.failed++
	default:
		l.finished++
	}
	if firstToken > 0 {
		l.ttft.add(now, firstToken)
	}
	if complete && prompt > 0 {
		i := l.bucket(now)
		l.prompt[i] += int64(prompt)
		l.cached[i] += int64(cached)
	}
}

// Percentiles of a latency over the window, in milliseconds.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// TrafficStats is the traffic part of the status page's JSON.
type TrafficStats struct {
	WindowSeconds int `json:"window_seconds"`
	// TokensPerSecond holds the generated tokens of each of the last
	// WindowSeconds whole seconds, oldest first (the current, partial
	// second is left out).
	TokensPerSecond []int64     `json:"tokens_per_second"`
	TTFT            Percentiles `json:"ttft"`
	ITL             Percentiles `json:"itl"`
	// PromptCacheHitRate is cached / prompt tokens of the requests that
	// finished in the window; null when none did.
	PromptCacheHitRate *float64 `json:"prompt_cache_hit_rate"`
	PromptTokens       int64    `json:"prompt_tokens"`
	CachedTokens       int64    `json:"cached_prompt_tokens"`
	// Request outcomes since this apiserver process started.
	Admitted  int64 `json:"requests_admitted"`
	Finished  int64 `json:"requests_finished"`
	Cancelled int64 `json:"requests_cancelled"`
	Failed    int64 `json:"requests_failed"`
}

// snapshot summarises the window ending at now.
func (l *liveStats) snapshot(now time.Time) TrafficStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := now.Unix()
	out := TrafficStats{WindowSeconds: statsWindow, TokensPerSecond: make([]int64, statsWindow),
		Admitted: l.admitted, Finished: l.finished, Cancelled: l.cancelled, Failed: l.failed}
	for k := range statsWindow {
		s := cur - statsWindow + int64(k) // oldest first, ending one second before cur
		i := int(s % statsWindow)
		if l.sec[i] == s {
			out.TokensPerSecond[k] = l.tokens[i]
		}
	}
	for i := range statsWindow {
		if l.sec[i] > cur-statsWindow && l.sec[i] <= cur {
			out.PromptTokens += l.prompt[i]
			out.CachedTokens += l.cached[i]
		}
	}
	if out.PromptTokens > 0 {
		r := float64(out.CachedTokens) / float64(out.PromptTokens)
		out.PromptCacheHitRate = &r
	}
	since := now.Add(-statsWindow * time.Second)
	out.TTFT = l.ttft.percentiles(since)
	out.ITL = l.itl.percentiles(since)
	return out
}

// sampleRing keeps the latest samples with their times.
type sampleRing struct {
	at   []time.Time
	v    []time.Duration
	next int
	full bool
}

func newSampleRing(n int) sampleRing {
	return sampleRing{at: make([]time.Time, n), v: make([]time.Duration, n)}
}

func (r *sampleRing) add(at time.Time, v time.Duration) {
	r.at[r.next], r.v[r.next] = at, v
	r.next++
	if r.next == len(r.v) {
		r.next, r.full = 0, true
	}
}

// percentiles of the samples taken after since (nearest-rank).
func (r *sampleRing) percentiles(since time.Time) Percentiles {
	n := r.next
	if r.full {
		n = len(r.v)
	}
	vals := make([]time.Duration, 0, n)
	for i := range n {
		if r.at[i].After(since) {
			vals = append(vals, r.v[i])
		}
	}
	if len(vals) == 0 {
		return Percentiles{}
	}
	slices.Sort(vals)
	rank := func(p float64) float64 {
		k := int(p*float64(len(vals))+0.999999) - 1 // ceil(p·n) - 1
		k = min(max(k, 0), len(vals)-1)
		return ms(vals[k])
	}
	return Percentiles{Count: len(vals), P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(vals[len(vals)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
