package infer

import (
	"math"
	"time"

	"github.com/lightllm-go/lightllm/pkg/engine"
)

// statsLine is the periodic vLLM-style summary infer logs at info: what
// runs and waits now, KV usage, and over the interval the prompt and
// generation throughput and the prefix-cache hit rate. It is written only
// when the interval saw tokens or something is running or waiting (vLLM
// does the same), so an idle server stays quiet. Infer has every number:
// the engine's counters, and the router's queue length from shm.
type statsLine struct {
	every time.Duration // 0: off
	last  time.Time
	base  engine.Stats // counters at the last line
	gen   uint64       // tokens written to slots, all time
	gen0  uint64       // gen at the last line
}

// statsFields are one line's values (statsLine.due computes them; a test
// reads them).
type statsFields struct {
	running, waiting             int
	kvUsagePct                   float64
	promptTokS, genTokS, hitRate float64 // hitRate in percent
}

// due returns the line's values when one is due at now and worth writing.
func (l *statsLine) due(now time.Time, st engine.Stats, routerWaiting int) (statsFields, bool) {
	if l.every <= 0 {
		return statsFields{}, false
	}
	if l.last.IsZero() {
		l.last, l.base, l.gen0 = now, st, l.gen
		return statsFields{}, false
	}
	dt := now.Sub(l.last)
	if dt < l.every {
		return statsFields{}, false
	}
	prefill := st.PrefillTokens - l.base.PrefillTokens
	cached := st.CachedTokens - l.base.CachedTokens
	gen := l.gen - l.gen0
	f := statsFields{running: st.Running, waiting: st.Waiting + max(routerWaiting, 0),
		promptTokS: float64(prefill) / dt.Seconds(), genTokS: float64(gen) / dt.Seconds()}
	if st.KVSize > 0 {
		f.kvUsagePct = 100 * float64(st.KVUsed) / float64(st.KVSize)
	}
	// Of the prompt tokens this interval needed, the share the prompt
	// cache served (computed ones are prefill, recompute included).
	if cached+prefill > 0 {
		f.hitRate = 100 * float64(cached) / float64(cached+prefill)
	}
	l.last, l.base, l.gen0 = now, st, l.gen
	if prefill == 0 && gen == 0 && f.running == 0 && f.waiting == 0 {
		return statsFields{}, false
	}
	return f, true
}

// logStats writes the stats line when due.
func (w *Worker) logStats(now time.Time) {
	if l := &w.statsLog; l.every <= 0 || (!l.last.IsZero() && now.Sub(l.last) < l.every) {
		return // the common case: no engine counters read
	}
	f, ok := w.statsLog.due(now, w.ex.Stats(), int(w.region.Load().Waiting.Load()))
	if !ok {
		return
	}
	round := func(v float64) float64 { return math.Round(v*10) / 10 }
	w.o.Log.Info().Int("running", f.running).Int("waiting", f.waiting).Float64("kv_usage_pct", round(f.kvUsagePct)).
		Float64("prompt_tokens_per_s", round(f.promptTokS)).Float64("generation_tokens_per_s", round(f.genTokS)).
		Float64("prefix_cache_hit_rate_pct", round(f.hitRate)).
		Msgf("Running: %d reqs, Waiting: %d reqs, KV cache usage: %.1f%%, Avg prompt throughput: %.1f tokens/s, "+
			"Avg generation throughput: %.1f tokens/s, Prefix cache hit rate: %.1f%%",
			f.running, f.waiting, f.kvUsagePct, f.promptTokS, f.genTokS, f.hitRate)
}
