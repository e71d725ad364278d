package shmbackend

import (
	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/metrics"
)

// Observer feeds the HTTP layer's per-request statistics to the metric
// role as LightLLM's apiserver does (request counts, token counters, the
// length and latency histograms, cache hit rate and throughput of the last
// request). Its methods never block: a metrics.Client queues or drops.
type Observer struct{ C *metrics.Client }

var _ apiserver.Observer = Observer{}

var _ apiserver.AdmissionObserver = Observer{}

var _ apiserver.AbortObserver = Observer{}

// RequestAborted implements apiserver.AbortObserver.
func (o Observer) RequestAborted(string) { o.C.Counter(metrics.RequestAborted, 1) }

// RequestAdmitted implements apiserver.AdmissionObserver: LightLLM counts a
// request when it is admitted, whatever becomes of it.
func (o Observer) RequestAdmitted(string) { o.C.Counter(metrics.RequestCount, 1) }

// RequestDone implements apiserver.Observer.
func (o Observer) RequestDone(s apiserver.RequestStats) {
	c := o.C
	failed := false
	for _, f := range s.Finish {
		failed = failed || f == apiserver.FinishError
	}
	if failed {
		c.Counter(metrics.RequestFailure, 1)
	} else {
		c.Counter(metrics.RequestSuccess, 1)
	}
	c.Counter(metrics.PromptTokens, float64(s.PromptTokens))
	c.Counter(metrics.GenerationTokens, float64(s.CompletionTokens))
	c.Observe(metrics.RequestInputLength, float64(s.PromptTokens))
	c.Observe(metrics.RequestGeneratedTokens, float64(s.CompletionTokens))
	c.Observe(metrics.RequestMaxNewTokens, float64(s.MaxNewTokens))
	c.Observe(metrics.CacheLength, float64(s.PromptCacheLen))
	c.ObserveDuration(metrics.RequestDuration, s.Total)
	if s.PromptTokens > 0 {
		ratio := float64(s.PromptCacheLen) / float64(s.PromptTokens)
		c.Observe(metrics.CacheRatio, ratio)
		c.Gauge(metrics.CacheHitRate, ratio)
	}
	if s.FirstToken > 0 {
		c.ObserveDuration(metrics.RequestFirstTokenDuration, s.FirstToken)
		c.ObserveDuration(metrics.RequestInferenceDuration, s.Total-s.FirstToken)
	}
	if s.CompletionTokens > 0 && s.Total > 0 {
		c.Observe(metrics.RequestTimePerToken, s.Total.Seconds()/float64(s.CompletionTokens))
		c.Gauge(metrics.GenThroughput, float64(s.CompletionTokens)/s.Total.Seconds())
	}
}

// RequestFailed implements apiserver.Observer.
func (o Observer) RequestFailed(string, int) { o.C.Counter(metrics.RequestFailure, 1) }
