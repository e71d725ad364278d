package sim

import (
	"math"
	"slices"
)

// Result is one simulation's measurements. The JSON form is the object
// `lightllm sim --json` prints.
type Result struct {
	Policy      string `json:"policy"`
	Requests    int    `json:"requests"`
	Finished    int    `json:"finished"`
	DecodeSteps int64  `json:"decode_steps"`
	// Evictions counts eviction events (a request evicted twice counts twice).
	Evictions   int64   `json:"evictions"`
	MeanKVUsage float64 `json:"mean_kv_usage"` // mean used/max_total_tokens over decode steps
	TTFTP50S    float64 `json:"ttft_p50_s"`
	TTFTP99S    float64 `json:"ttft_p99_s"`
	// MaxITLP99S is the 99th percentile over requests of each request's
	// largest inter-token gap.
	MaxITLP99S float64 `json:"max_itl_p99_s"`
	// GoodputTokS counts only output tokens of requests that met the SLA,
	// per second of simulated time.
	GoodputTokS float64 `json:"goodput_tok_s"`
	SLA         SLA     `json:"sla"`

	PrefillSteps    int64   `json:"-"`
	EvictedRequests int     `json:"-"` // distinct requests evicted at least once
	SLAMet          int     `json:"-"` // requests that met the SLA
	DurationS       float64 `json:"-"` // simulated time until the last finish
}

func (e *engine) result() *Result {
	res := &Result{
		Policy: e.sched.Policy().Name(), Requests: len(e.reqs), Finished: e.finished,
		DecodeSteps: e.decodeSteps, PrefillSteps: e.prefillStep, Evictions: e.evictions,
		SLA: e.o.SLA, DurationS: e.t,
	}
	if e.decodeSteps > 0 {
		res.MeanKVUsage = e.usageSum / float64(e.decodeSteps)
	}
	ttft := make([]float64, 0, len(e.reqs))
	gaps := make([]float64, 0, len(e.reqs))
	goodTokens := 0
	for i := range e.reqs {
		sr := &e.reqs[i]
		if sr.evicted {
			res.EvictedRequests++
		}
		if !sr.finished {
			continue
		}
		t := sr.first - sr.arrival
		ttft = append(ttft, t)
		gaps = append(gaps, sr.maxGap)
		if t <= e.o.SLA.TTFTS && sr.maxGap <= e.o.SLA.MaxITLS {
			res.SLAMet++
			goodTokens += sr.r.OutputLen
		}
	}
	res.TTFTP50S = percentile(ttft, 50)
	res.TTFTP99S = percentile(ttft, 99)
	res.MaxITLP99S = percentile(gaps, 99)
	if e.t > 0 {
		res.GoodputTokS = float64(goodTokens) / e.t
	}
	return res
}

// percentile is the nearest-rank percentile (0 for no samples).
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	rank := int(math.Ceil(p / 100 * float64(len(v))))
	return v[min(max(rank, 1), len(v))-1]
}
