package metrics

import (
	"context"
	"io"
	"net/http"
	"strconv"
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

// APIHandler serves the API port's /metrics: the live gauges from live's
// registry, followed by the metric role's text fetched from metricURL
// (http://host:metric_port/metrics) when it answers within timeout. The
// metric role being down costs at most timeout and leaves the live gauges
// intact, so the gateway keeps routing. metricURL "" serves the live gauges
// only.
func APIHandler(live *prometheus.Registry, metricURL string, timeout time.Duration) http.Handler {
	liveH := promhttp.HandlerFor(live, promhttp.HandlerOpts{
		// The text format only: the proxied part is text, and the two are concatenated.
		EnableOpenMetrics: false,
	})
	client := &http.Client{Timeout: timeout}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Force the plain text format: a negotiated protobuf or gzip
		// encoding could not be concatenated with the proxied text.
		lr := r.Clone(r.Context())
		lr.Header.Set("Accept", "text/plain")
		lr.Header.Del("Accept-Encoding")
		liveH.ServeHTTP(w, lr)
		if metricURL == "" {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricURL, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept", "text/plain")
		resp, err := client.Do(req)
		if err != nil {
			io.WriteString(w, "# metric role unreachable\n")
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			io.WriteString(w, "# metric role answered "+resp.Status+"\n")
			return
		}
		_, _ = io.Copy(w, resp.Body)
	})
}
