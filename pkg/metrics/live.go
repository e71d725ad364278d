package metrics

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// LiveLoad is what the inference gateways route on, read at scrape time.
type LiveLoad struct {
	Waiting int64   // queued requests
	Running int64   // running requests
	KVUsage float64 // used KV tokens / capacity, 0..1
	// KVCapacity is the KV capacity in tokens: num_gpu_blocks of the
	// cache-config info gauge, since a block is one token here.
	KVCapacity int64
	// KVUsed and KVEvictable are the tokens behind KVUsage: held by
	// requests, and cached prompt tokens nobody references (the status page
	// shows both).
	KVUsed, KVEvictable int64
}

// LoadFunc reads the live load; it must be cheap (the EPP scrapes every
// 50 ms) and safe for concurrent use. ShmLoadFunc adapts shm's counters.
type LoadFunc func() LiveLoad

// Names of the live gauges. Ours default; the vLLM names are what the
// Gateway API Inference Extension's endpoint picker reads out of the box.
const (
	LiveWaiting         = "lightllm_num_requests_waiting"
	LiveRunning         = "lightllm_num_requests_running"
	LiveKVUsage         = "lightllm_kv_cache_usage_perc"
	LiveCacheConfigInfo = "lightllm_cache_config_info"

	VLLMWaiting         = "vllm:num_requests_waiting"
	VLLMRunning         = "vllm:num_requests_running"
	VLLMKVUsage         = "vllm:kv_cache_usage_perc"
	VLLMCacheConfigInfo = "vllm:cache_config_info"
)

// LiveOptions configure NewLiveCollector.
type LiveOptions struct {
	ModelName string
	// VLLMCompat also emits the vllm:* names (--metrics_vllm_compat).
	VLLMCompat bool
}

// liveCollector reads the load once per scrape and emits constant metrics:
// nothing is stored between scrapes, so there is nothing to keep in sync.
type liveCollector struct {
	load  LoadFunc
	model string
	descs []*prometheus.Desc // waiting, running, kv, info; then the vllm ones
}

// NewLiveCollector returns the collector the apiserver mounts on the API
// port's /metrics (issue 13): waiting, running, KV usage fraction and a
// cache-config info gauge (block_size=1, num_gpu_blocks), read at scrape time.
func NewLiveCollector(load LoadFunc, o LiveOptions) prometheus.Collector {
	c := &liveCollector{load: load, model: o.ModelName}
	ml := []string{"model_name"}
	info := []string{"model_name", "block_size", "num_gpu_blocks"}
	c.descs = append(c.descs,
		prometheus.NewDesc(LiveWaiting, "Requests waiting to be scheduled", ml, nil),
		prometheus.NewDesc(LiveRunning, "Requests running on the engine", ml, nil),
		prometheus.NewDesc(LiveKVUsage, "KV cache usage, 0..1 (1 = full)", ml, nil),
		prometheus.NewDesc(LiveCacheConfigInfo, "KV cache configuration (block size 1: token-level cache)", info, nil))
	if o.VLLMCompat {
		c.descs = append(c.descs,
			prometheus.NewDesc(VLLMWaiting, "Number of requests waiting to be processed.", ml, nil),
			prometheus.NewDesc(VLLMRunning, "Number of requests in model execution batches.", ml, nil),
			prometheus.NewDesc(VLLMKVUsage, "KV-cache usage. 1 means 100 percent usage.", ml, nil),
			prometheus.NewDesc(VLLMCacheConfigInfo, "Information of the LLMEngine CacheConfig", info[1:], nil))
	}
	return c
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.load()
	blocks := strconv.FormatInt(max(l.KVCapacity, 0), 10)
	kv := min(max(l.KVUsage, 0), 1)
	for i := 0; i+4 <= len(c.descs); i += 4 {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, float64(l.Waiting), c.model)
		ch <- prometheus.MustNewConstMetric(c.descs[i+1], prometheus.GaugeValue, float64(l.Running), c.model)
		ch <- prometheus.MustNewConstMetric(c.descs[i+2], prometheus.GaugeValue, kv, c.model)
		if i == 0 {
			ch <- prometheus.MustNewConstMetric(c.descs[i+3], prometheus.GaugeValue, 1, c.model, "1", blocks)
		} else {
			ch <- prometheus.MustNewConstMetric(c.descs[i+3], prometheus.GaugeValue, 1, "1", blocks)
		}
	}
}

// APIOptions configure APIHandlerWith.
type APIOptions struct {
	// MetricURL is the metric role's /metrics (http://host:metric_port/metrics);
	// "" serves the live gauges only.
	MetricURL string
	// Timeout bounds one fetch from the metric role (default 250 ms).
	Timeout time.Duration
	// CacheFor is how long a fetched text (or a failed fetch) is reused
	// (default 500 ms; negative: fetch on every scrape). An endpoint picker
	// scraping every 50 ms then costs the metric role two scrapes a second,
	// and a hung metric role delays at most one scrape per period; the live
	// gauges are read afresh on every scrape regardless.
	CacheFor time.Duration
}

// APIHandlerWith serves the API port's /metrics: the live gauges from
// live's registry, read at every scrape, followed by the metric role's text
// (fetched at most once per CacheFor, shared by concurrent scrapes). The
// metric role being down or hung never loses the live gauges, so the
// gateway keeps routing.
func APIHandlerWith(live *prometheus.Registry, o APIOptions) http.Handler {
	if o.Timeout <= 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.CacheFor == 0 {
		o.CacheFor = 500 * time.Millisecond
	}
	liveH := promhttp.HandlerFor(live, promhttp.HandlerOpts{
		// The text format only: the proxied part is text, and the two are concatenated.
		EnableOpenMetrics: false,
	})
	var px *proxy
	if o.MetricURL != "" {
		px = &proxy{url: o.MetricURL, timeout: o.Timeout, cacheFor: o.CacheFor, client: &http.Client{Timeout: o.Timeout}}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Force the plain text format: a negotiated protobuf or gzip
		// encoding could not be concatenated with the proxied text.
		lr := r.Clone(r.Context())
		lr.Header.Set("Accept", "text/plain")
		lr.Header.Del("Accept-Encoding")
		liveH.ServeHTTP(w, lr)
		if px != nil {
			_, _ = w.Write(px.text(r.Context()))
		}
	})
}

// proxy fetches the metric role's text, one fetch at a time, and keeps the
// last answer for cacheFor.
type proxy struct {
	url      string
	timeout  time.Duration
	cacheFor time.Duration
	client   *http.Client

	mu       sync.Mutex
	body     []byte
	at       time.Time
	inflight chan struct{} // closed when the running fetch ends; nil when none
}

// text returns the cached text when fresh, else joins or starts a fetch.
// A caller whose ctx ends first gets the stale text.
func (p *proxy) text(ctx context.Context) []byte {
	p.mu.Lock()
	if p.body != nil && p.cacheFor > 0 && time.Since(p.at) < p.cacheFor {
		b := p.body
		p.mu.Unlock()
		return b
	}
	wait := p.inflight
	if wait == nil {
		wait = make(chan struct{})
		p.inflight = wait
		go p.fetch(wait)
	}
	stale := p.body
	p.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return stale
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.body
}

// fetch runs detached from any one scrape, so a scraper that goes away does
// not fail the others waiting on it.
func (p *proxy) fetch(done chan struct{}) {
	body := p.get()
	p.mu.Lock()
	p.body, p.at, p.inflight = body, time.Now(), nil
	p.mu.Unlock()
	close(done)
}

func (p *proxy) get() []byte {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return []byte("# metric role: bad URL\n")
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := p.client.Do(req)
	if err != nil {
		return []byte("# metric role unreachable\n")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return []byte("# metric role answered " + resp.Status + "\n")
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return []byte("# metric role: reading its answer failed\n")
	}
	return b
}
