// Package bench is `lightllm bench`: a serving benchmark for any
// OpenAI-compatible or LightLLM-native server, measuring the way vLLM's
// `bench serve` (and LightLLM's benchmark_sharegpt.py, adapted from it)
// does: streaming requests sent at gamma-distributed arrival times or at a
// fixed concurrency, TTFT, TPOT, ITL and end-to-end latency per request,
// throughput, and goodput under SLOs.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lightllm-go/lightllm/pkg/rawconn"
)

// Config is one benchmark run.
type Config struct {
	URL            string  // server base URL, e.g. http://127.0.0.1:8000
	API            API     // wire format
	Model          string  // OpenAI "model"; empty: ask /v1/models, else "default"
	RequestRate    float64 // requests/s; +Inf sends all at once
	Burstiness     float64 // gamma shape of the arrival gaps; 1 = Poisson
	MaxConcurrency int     // 0: unlimited
	IgnoreEOS      bool
	Seed           uint64
	SLO            SLO
	RequestTimeout time.Duration // per request; 0: none

	Tokenizer Tokenizer    // counts output tokens when the server does not
	Client    *http.Client // nil: a client pooled for MaxConcurrency
	Progress  io.Writer    // nil: no progress bar
	DatasetID string       // for the report: "random" or "sharegpt:FILE"
}

// Validate checks the configuration before anything is sent.
func (c *Config) Validate() error {
	switch {
	case c.URL == "":
		return errors.New("bench: --url is required")
	case !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return fmt.Errorf("bench: --url %q must start with http:// or https://", c.URL)
	case c.API != APICompletions && c.API != APIChat && c.API != APILightLLM:
		return fmt.Errorf("bench: --api %q: want %s, %s or %s", c.API, APICompletions, APIChat, APILightLLM)
	case !(c.RequestRate > 0):
		return fmt.Errorf("bench: --request-rate must be > 0 or inf, got %g", c.RequestRate)
	case !(c.Burstiness > 0) || math.IsInf(c.Burstiness, 0):
		return fmt.Errorf("bench: --burstiness must be a positive number, got %g", c.Burstiness)
	case c.MaxConcurrency < 0:
		return fmt.Errorf("bench: --max-concurrency must be >= 0, got %d", c.MaxConcurrency)
	}
	c.URL = strings.TrimRight(c.URL, "/")
	return nil
}

// Run sends every sample and measures the server. When ctx is canceled
// (Ctrl-C) it stops sending, cuts off the requests in flight and returns
// the report of what finished, marked Interrupted, with a nil error.
func Run(ctx context.Context, cfg Config, samples []Sample) (*Report, error) {
	if len(samples) == 0 {
		return nil, errors.New("bench: no samples to send")
	}
	results := make([]*Result, len(samples))
	need := demand{}
	for i, s := range samples {
		if s.PromptLen+s.OutputLen > need.input+need.output {
			need = demand{what: fmt.Sprintf("sample %d", i), input: s.PromptLen, output: s.OutputLen}
		}
	}
	rep, err := runJobs(ctx, cfg, len(samples), len(samples), need, func(ctx context.Context, q *requester, i int, done func(*Result)) {
		results[i] = q.send(ctx, cfg, samples[i])
		done(results[i])
	}, func() []*Result { return results })
	if err != nil {
		return nil, err
	}
	if w := cacheWarning(rep.CacheUse, cfg.Seed); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	return rep, nil
}

// runJobs is the dispatch loop both datasets share: job i starts at the
// i-th arrival time (and, with MaxConcurrency, once a slot is free), runs
// in its own goroutine and reports each request it makes through done.
// total is the number of requests the jobs will make, for the progress
// bar and the report; need is its longest request, refused before anything
// is sent when the server's max_model_len is shorter; results is read once
// every job has returned.
func runJobs(ctx context.Context, cfg Config, jobs, total int, need demand,
	job func(ctx context.Context, q *requester, i int, done func(*Result)), results func() []*Result) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		conns := cfg.MaxConcurrency
		if conns == 0 {
			conns = jobs
		}
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		client = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment,
			// Raw socket reads: the client reads once per token, and it
			// shares the machine with the server it measures (pkg/rawconn).
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dialer.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return rawconn.Conn(c), nil
			},
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true, // compression would batch SSE chunks
		}}
		defer client.CloseIdleConnections()
	}
	// The native API has no model name, but a LightLLM server answers
	// /v1/models as well, with its max_model_len.
	info, infoErr := fetchModel(ctx, client, cfg.URL)
	if cfg.Model == "" && cfg.API != APILightLLM {
		cfg.Model = info.ID
		if infoErr != nil {
			cfg.Model = "default"
		}
	}
	if err := need.fits(info.MaxModelLen); err != nil {
		return nil, err
	}
	cacheBefore, cacheKnown := settledCache(ctx, client, cfg.URL)

	arrivals := Arrivals(jobs, cfg.RequestRate, cfg.Burstiness, cfg.Seed)
	start := time.Now()
	q := &requester{client: client, url: cfg.URL, api: cfg.API, model: cfg.Model,
		ignoreEOS: cfg.IgnoreEOS, tok: cfg.Tokenizer, start: start, now: time.Now}
	prog := newProgress(cfg.Progress, total)
	var sem chan struct{}
	if cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	var wg sync.WaitGroup
	interrupted := false
dispatch:
	for i := range jobs {
		if wait := time.Until(start.Add(arrivals[i])); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				interrupted = true
				break dispatch
			}
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				interrupted = true
				break dispatch
			}
		}
		if ctx.Err() != nil {
			interrupted = true
			break
		}
		wg.Go(func() {
			job(ctx, q, i, prog.done)
			if sem != nil {
				<-sem
			}
		})
	}
	wg.Wait()
	duration := time.Since(start)
	prog.finish()
	interrupted = interrupted || ctx.Err() != nil
	rep := newReport(cfg, results(), duration, interrupted, total)
	switch m := rep.Metrics; {
	case m.ServerCacheCounts:
		rep.CacheUse = &CacheUse{Source: "usage", Cached: float64(m.TotalCached), Prompt: float64(m.TotalInput)}
	case cacheKnown && !interrupted && m.Completed > 0:
		rep.CacheUse = cacheDelta(ctx, client, cfg.URL, cacheBefore, m.TotalInput)
	}
	return rep, nil
}

// settledCache reads the server's cache counters once they hold still: a
// metric role counts asynchronously, and the tail of a run just before
// (another bench, a warm-up) must not be taken for this run's. It waits
// 200 ms between reads, 1 s at most; a server under other traffic never
// settles, and then the last read is used.
func settledCache(ctx context.Context, client *http.Client, url string) (cacheSnapshot, bool) {
	snap, ok := scrapeCache(ctx, client, url)
	for range 5 {
		if !ok || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
		next, nok := scrapeCache(ctx, client, url)
		if !nok || next == snap {
			break
		}
		snap = next
	}
	return snap, ok
}

// cacheDelta is what the server's cache counters rose by over the run. The
// server's metric role counts events it receives asynchronously, so the
// counters are read again until the prompt counter has risen by the run's
// prompt tokens, for a few seconds at most.
func cacheDelta(ctx context.Context, client *http.Client, url string, before cacheSnapshot, prompts int) *CacheUse {
	deadline := time.Now().Add(3 * time.Second)
	for {
		after, ok := scrapeCache(ctx, client, url)
		if !ok || after.counter != before.counter {
			return nil
		}
		prompt := after.prompt - before.prompt
		if prompt >= float64(prompts) || time.Now().After(deadline) || ctx.Err() != nil {
			if prompt <= 0 {
				prompt = float64(prompts) // the server counts no prompt tokens
			}
			cached := min(max(after.cached-before.cached, 0), prompt)
			return &CacheUse{Source: "/metrics " + before.counter.cached, Cached: cached, Prompt: prompt}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// send makes one request under the per-request timeout.
func (q *requester) send(ctx context.Context, cfg Config, s Sample) *Result {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.RequestTimeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, cfg.RequestTimeout)
	}
	defer cancel()
	r := q.do(rctx, s)
	if r.Canceled && ctx.Err() == nil {
		r.Canceled = false // our own per-request timeout: a failure
	}
	return r
}
