package metrics

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lightllm-go/lightllm/shm"
)

func TestLiveCollector(t *testing.T) {
	load := LiveLoad{Waiting: 4, Running: 2, KVUsage: 0.25, KVCapacity: 8192}
	ours := `
# HELP lightllm_cache_config_info KV cache configuration (block size 1: token-level cache)
# TYPE lightllm_cache_config_info gauge
lightllm_cache_config_info{block_size="1",model_name="m",num_gpu_blocks="8192"} 1
# HELP lightllm_kv_cache_usage_perc KV cache usage, 0..1 (1 = full)
# TYPE lightllm_kv_cache_usage_perc gauge
lightllm_kv_cache_usage_perc{model_name="m"} 0.25
# HELP lightllm_num_requests_running Requests running on the engine
# TYPE lightllm_num_requests_running gauge
lightllm_num_requests_running{model_name="m"} 2
# HELP lightllm_num_requests_waiting Requests waiting to be scheduled
# TYPE lightllm_num_requests_waiting gauge
lightllm_num_requests_waiting{model_name="m"} 4
`
	vllm := `
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="1",num_gpu_blocks="8192"} 1
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.25
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 4
`
	tests := map[string]struct {
		compat bool
		want   string
		count  int
	}{
		"ours":        {false, ours, 4},
		"vllm compat": {true, ours + vllm, 8},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := NewLiveCollector(func() LiveLoad { return load }, LiveOptions{ModelName: "m", VLLMCompat: tc.compat})
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want)); err != nil {
				t.Error(err)
			}
			if n := testutil.CollectAndCount(c); n != tc.count {
				t.Errorf("%d series, want %d", n, tc.count)
			}
		})
	}
}

func TestLiveCollectorClampsUsage(t *testing.T) {
	for _, u := range []float64{-0.5, 1.7} {
		c := NewLiveCollector(func() LiveLoad { return LiveLoad{KVUsage: u} }, LiveOptions{})
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == LiveKVUsage {
				if v := mf.GetMetric()[0].GetGauge().GetValue(); v < 0 || v > 1 {
					t.Errorf("usage %v exported as %v", u, v)
				}
			}
		}
	}
}

func TestShmLoadFunc(t *testing.T) {
	tests := map[string]struct {
		capacity, free, evictable, waiting, running int64
		want                                        LiveLoad
	}{
		"idle":              {1000, 1000, 0, 0, 0, LiveLoad{KVCapacity: 1000}},
		"half used":         {1000, 500, 0, 3, 2, LiveLoad{Waiting: 3, Running: 2, KVUsage: 0.5, KVCapacity: 1000, KVUsed: 500}},
		"cache counts free": {1000, 200, 300, 0, 1, LiveLoad{Running: 1, KVUsage: 0.5, KVCapacity: 1000, KVUsed: 500, KVEvictable: 300}},
		"not sized yet":     {0, 0, 0, 1, 0, LiveLoad{Waiting: 1}},
		"inconsistent":      {100, 150, 0, -1, 0, LiveLoad{KVCapacity: 100}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var l shm.Load
			l.MaxTotalTokenNum.Store(tc.capacity)
			l.FreeKVTokens.Store(tc.free)
			l.EvictableKVTokens.Store(tc.evictable)
			l.Waiting.Store(tc.waiting)
			l.Running.Store(tc.running)
			if got := ShmLoadFunc(&l)(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAPIHandler(t *testing.T) {
	live := prometheus.NewRegistry()
	live.MustRegister(NewLiveCollector(func() LiveLoad { return LiveLoad{Waiting: 1, Running: 2, KVUsage: 0.5, KVCapacity: 10} }, LiveOptions{ModelName: "m", VLLMCompat: true}))
	role := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "# TYPE lightllm_request_count_total counter\nlightllm_request_count_total{model_name=\"m\"} 9\n")
	}))
	defer role.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	tests := map[string]struct {
		url       string
		wantProxy bool
	}{
		"metric role up":   {role.URL, true},
		"metric role down": {downURL, false},
		"no metric role":   {"", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			api := httptest.NewServer(APIHandler(live, tc.url, time.Second))
			defer api.Close()
			req, _ := http.NewRequest(http.MethodGet, api.URL, nil)
			// What a Prometheus server asks for: protobuf first, gzip.
			req.Header.Set("Accept", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3")
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mfs := parseText(t, string(body))
			if m := series(mfs, VLLMWaiting, nil); m == nil || m.GetGauge().GetValue() != 1 {
				t.Errorf("live gauge missing:\n%s", body)
			}
			if got := series(mfs, "lightllm_request_count_total", nil) != nil; got != tc.wantProxy {
				t.Errorf("proxied metric present=%v, want %v:\n%s", got, tc.wantProxy, body)
			}
		})
	}
}

// scrapeText GETs url and returns the body and how long it took.
func scrapeText(t *testing.T, url string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), time.Since(start)
}

// The metric role's text is fetched once per CacheFor however often the
// API port is scraped, concurrent scrapes share one fetch, and the live
// gauges are read on every scrape.
func TestAPIHandlerCachesProxy(t *testing.T) {
	var fetches, reads atomic.Int64
	role := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := fetches.Add(1)
		time.Sleep(20 * time.Millisecond) // long enough for concurrent scrapes to overlap
		fmt.Fprintf(w, "lightllm_request_count_total{model_name=\"m\"} %d\n", n)
	}))
	defer role.Close()
	live := prometheus.NewRegistry()
	live.MustRegister(NewLiveCollector(func() LiveLoad { return LiveLoad{Running: reads.Add(1)} }, LiveOptions{ModelName: "m"}))
	api := httptest.NewServer(APIHandlerWith(live, APIOptions{MetricURL: role.URL, CacheFor: 300 * time.Millisecond}))
	defer api.Close()

	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if body, _ := scrapeText(t, api.URL); !strings.Contains(body, `lightllm_request_count_total{model_name="m"} 1`) {
				t.Errorf("concurrent scrape:\n%s", body)
			}
		}()
	}
	wg.Wait()
	body, _ := scrapeText(t, api.URL)
	if n := fetches.Load(); n != 1 || !strings.Contains(body, "} 1\n") {
		t.Fatalf("9 scrapes within the cache period: %d fetches, want 1:\n%s", n, body)
	}
	if n := reads.Load(); n != 9 {
		t.Errorf("live load read %d times for 9 scrapes", n)
	}
	time.Sleep(350 * time.Millisecond)
	if body, _ := scrapeText(t, api.URL); fetches.Load() != 2 || !strings.Contains(body, "} 2\n") {
		t.Errorf("after the cache period: %d fetches:\n%s", fetches.Load(), body)
	}
}

// A hung metric role (accepts, never answers) costs one scrape the fetch
// timeout; scrapes within the cache period answer at once, live gauges
// included.
func TestAPIHandlerHungMetricRole(t *testing.T) {
	release := make(chan struct{})
	role := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer role.Close()
	defer close(release)
	live := prometheus.NewRegistry()
	live.MustRegister(NewLiveCollector(func() LiveLoad { return LiveLoad{Waiting: 3} }, LiveOptions{ModelName: "m"}))
	api := httptest.NewServer(APIHandlerWith(live, APIOptions{MetricURL: role.URL, Timeout: 100 * time.Millisecond, CacheFor: time.Second}))
	defer api.Close()
	body, took := scrapeText(t, api.URL)
	if took > time.Second || !strings.Contains(body, `lightllm_num_requests_waiting{model_name="m"} 3`) || !strings.Contains(body, "# metric role unreachable") {
		t.Fatalf("first scrape took %v:\n%s", took, body)
	}
	for range 5 {
		if body, took := scrapeText(t, api.URL); took > 50*time.Millisecond || !strings.Contains(body, "} 3\n") {
			t.Fatalf("scrape within the cache period took %v:\n%s", took, body)
		}
	}
}

// BenchmarkAPIHandlerLive measures one scrape of the live gauges, which the
// endpoint picker does every 50 ms per replica.
func BenchmarkAPIHandlerLive(b *testing.B) {
	var l shm.Load
	l.MaxTotalTokenNum.Store(1 << 20)
	live := prometheus.NewRegistry()
	live.MustRegister(NewLiveCollector(ShmLoadFunc(&l), LiveOptions{ModelName: "m", VLLMCompat: true}))
	h := APIHandler(live, "", time.Second)
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
