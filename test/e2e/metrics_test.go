package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/health"
	"github.com/lightllm-go/lightllm/shm"
)

// TestMetrics checks issues 6 and 13 on the real server: request counts,
// token counters and TTFT / per-token histograms equal what was sent and
// received, on the API port and the metric port alike, with health probes
// left out; a hung and then killed metric role neither fails nor slows
// requests, and metrics flow again after its restart; and the live gauges,
// scraped every 50 ms under load, match the router's and infer's own shm
// counters.
func TestMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	if apiserver.HealthProbeHeader != health.ProbeHeader {
		t.Fatalf("the apiserver looks for %q, health sends %q", apiserver.HealthProbeHeader, health.ProbeHeader)
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	// Probes every 200 ms (they must not count as requests); 8 running
	// slots so that a load of 24 streams queues; a 2 s restart backoff
	// keeps a killed metric role down while requests are timed.
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"),
		"--health_interval", "200ms", "--running_max_req_size", "8", "--restart_backoff", "2s", "--metrics_vllm_compat")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	metricURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", obsMetricPort(t, s))
	apiURL := s.base + "/metrics"

	t.Run("counts", func(t *testing.T) { obsCounts(ctx, t, s, apiURL, metricURL) })
	t.Run("metric role down", func(t *testing.T) { obsMetricRoleDown(ctx, t, s, apiURL, metricURL) })
	t.Run("live gauges under load", func(t *testing.T) { obsLiveGauges(ctx, t, s, apiURL) })
}

// obsMetricPort reads the resolved metric port from the instance's config.
func obsMetricPort(t *testing.T, s *server) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.runDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c config.Config
	if err := json.Unmarshal(b, &c); err != nil || c.MetricPort <= 0 {
		t.Fatalf("config.json: metric_port %d, %v", c.MetricPort, err)
	}
	return c.MetricPort
}

// obsScrape GETs a /metrics URL and parses it.
func obsScrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, took, fmt.Errorf("scrape %s: %s, %v", url, resp.Status, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, took, fmt.Errorf("scrape %s: %w\n%s", url, err, body)
	}
	return mfs, took, nil
}

// obsValue is the value of the unlabelled-but-model_name series of a
// counter or gauge, or a histogram's count or sum (suffix "_count" or
// "_sum" on a histogram family name); ok is false when absent.
func obsValue(mfs map[string]*dto.MetricFamily, name string) (float64, bool) {
	for _, suffix := range []string{"_count", "_sum"} {
		if base, found := strings.CutSuffix(name, suffix); found {
			if mf := mfs[base]; mf != nil && mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.GetMetric()) > 0 {
				// Summed over the label values (a step histogram has one
				// series per method: prefill and decode).
				var v float64
				for _, m := range mf.GetMetric() {
					h := m.GetHistogram()
					if suffix == "_count" {
						v += float64(h.GetSampleCount())
					} else {
						v += h.GetSampleSum()
					}
				}
				return v, true
			}
		}
	}
	mf := mfs[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return 0, false
	}
	m := mf.GetMetric()[0]
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// obsCounted are the series the counts test follows.
var obsCounted = []string{
	"lightllm_request_count_total", "lightllm_request_success_total", "lightllm_request_failure_total",
	"lightllm_prompt_tokens_total", "lightllm_generation_tokens_total",
	"lightllm_request_input_length_count", "lightllm_request_input_length_sum",
	"lightllm_request_generated_tokens_count", "lightllm_request_generated_tokens_sum",
	"lightllm_request_first_token_duration_count", "lightllm_request_mean_time_per_token_duration_count",
	"lightllm_request_inference_duration_count", "lightllm_request_duration_count",
	"lightllm_cache_length_sum", "lightllm_request_aborted_total",
}

// obsSnapshot reads obsCounted from one scrape.
func obsSnapshot(ctx context.Context, url string) (map[string]float64, error) {
	mfs, _, err := obsScrape(ctx, url)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, n := range obsCounted {
		v, ok := obsValue(mfs, n)
		if !ok {
			return nil, fmt.Errorf("%s: no series %s", url, n)
		}
		out[n] = v
	}
	return out, nil
}

// obsStable waits until two snapshots of url taken 300 ms apart agree
// (events in flight, or queued while the metric role was away, are in).
func obsStable(ctx context.Context, t *testing.T, url string) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var prev map[string]float64
	for time.Now().Before(deadline) {
		cur, err := obsSnapshot(ctx, url)
		if err == nil && prev != nil && fmt.Sprint(cur) == fmt.Sprint(prev) {
			return cur
		}
		prev = cur
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s: metrics did not settle within 10 s (last %v)", url, prev)
	return nil
}

// obsNative is the part of a /generate answer the counts test uses.
type obsNative struct {
	GeneratedText []string `json:"generated_text"`
	Count         int      `json:"count_output_tokens"`
	PromptTokens  int      `json:"prompt_tokens"`
	// Tokens is there with return_details.
	Tokens []struct {
		PromptCacheLen int `json:"prompt_cache_len"`
	} `json:"tokens"`
}

// obsCompletion is the part of a /v1/completions answer the test uses.
type obsCompletion struct {
	ID    string `json:"id"`
	Usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Details    struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// obsPost POSTs a JSON body and decodes a 200 answer into out; it returns
// the response headers.
func obsPost(ctx context.Context, url string, body any, hdr http.Header, out any) (http.Header, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.Header, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.Header, fmt.Errorf("POST %s: %s: %s", url, resp.Status, rb)
	}
	if out != nil {
		if err := json.Unmarshal(rb, out); err != nil {
			return resp.Header, fmt.Errorf("POST %s: %w: %s", url, err, rb)
		}
	}
	return resp.Header, nil
}

// obsCounts sends known requests and checks every counter and histogram
// count moved by exactly what was sent and received, on both ports.
func obsCounts(ctx context.Context, t *testing.T, s *server, apiURL, metricURL string) {
	before := map[string]map[string]float64{apiURL: obsStable(ctx, t, apiURL), metricURL: obsStable(ctx, t, metricURL)}
	mfs, _, err := obsScrape(ctx, metricURL)
	if err != nil {
		t.Fatal(err)
	}
	queuedBefore, _ := obsValue(mfs, "lightllm_request_queue_duration_count")

	want := map[string]float64{}
	add := func(prompt, completion, cached int) {
		for _, n := range []string{"lightllm_request_count_total", "lightllm_request_success_total", "lightllm_request_input_length_count",
			"lightllm_request_generated_tokens_count", "lightllm_request_first_token_duration_count",
			"lightllm_request_mean_time_per_token_duration_count", "lightllm_request_inference_duration_count",
			"lightllm_request_duration_count"} {
			want[n]++
		}
		want["lightllm_prompt_tokens_total"] += float64(prompt)
		want["lightllm_request_input_length_sum"] += float64(prompt)
		want["lightllm_generation_tokens_total"] += float64(completion)
		want["lightllm_request_generated_tokens_sum"] += float64(completion)
		want["lightllm_cache_length_sum"] += float64(cached)
	}
	for i, p := range []string{"Once upon a time", "Lily", "The cat sat"} {
		var r obsNative
		body := map[string]any{"inputs": p, "parameters": map[string]any{"max_new_tokens": 8 + 4*i, "ignore_eos": true, "return_details": true}}
		if _, err := obsPost(ctx, s.base+"/generate", body, nil, &r); err != nil {
			t.Fatal(err)
		}
		if r.Count != 8+4*i || r.PromptTokens == 0 || len(r.Tokens) != r.Count {
			t.Fatalf("/generate %q: %d tokens (%d details) for a prompt of %d", p, r.Count, len(r.Tokens), r.PromptTokens)
		}
		// The health probes' prompt shares the BOS token with every prompt.
		add(r.PromptTokens, r.Count, r.Tokens[len(r.Tokens)-1].PromptCacheLen)
	}
	// The same prompt twice: the second is served partly from the radix
	// prompt cache, which cache_length and the cache hit rate must show.
	var hitRate float64
	for i := range 2 {
		var r obsCompletion
		hdr := http.Header{"X-Request-Id": {fmt.Sprintf("metrics-e2e-%d", i)}}
		body := map[string]any{"model": "m", "prompt": "One day a little girl went to the park with her mom", "max_tokens": 6}
		got, err := obsPost(ctx, s.base+"/v1/completions", body, hdr, &r)
		if err != nil {
			t.Fatal(err)
		}
		if id := got.Get("X-Request-Id"); id != hdr.Get("X-Request-Id") || !strings.Contains(r.ID, id) {
			t.Errorf("x-request-id %q echoed as %q, completion id %q", hdr.Get("X-Request-Id"), id, r.ID)
		}
		add(r.Usage.Prompt, r.Usage.Completion, r.Usage.Details.Cached)
		if i == 1 {
			if r.Usage.Details.Cached == 0 {
				t.Errorf("a repeated prompt found nothing in the prompt cache: %+v", r.Usage)
			}
			hitRate = float64(r.Usage.Details.Cached) / float64(r.Usage.Prompt)
		}
	}
	// A client that goes away mid-stream was admitted: it counts as a
	// request, neither a success nor a failure, and as aborted (#22).
	sctx, stop := context.WithCancel(ctx)
	_, _, err = s.stream(sctx, "Lily", map[string]any{"max_new_tokens": 400, "ignore_eos": true}, func(int) { stop() })
	stop()
	if err == nil {
		t.Fatal("the stream finished although its client left after the first event")
	}
	want["lightllm_request_count_total"]++
	want["lightllm_request_aborted_total"]++
	// A rejected request counts as a failure only.
	if _, err := obsPost(ctx, s.base+"/generate", map[string]any{"inputs": 5}, nil, nil); err == nil {
		t.Fatal("a numeric prompt was accepted")
	}
	want["lightllm_request_failure_total"]++
	// A request marked as a health probe is not counted at all.
	probe := http.Header{apiserver.HealthProbeHeader: {"1"}}
	if _, err := obsPost(ctx, s.base+"/generate", map[string]any{"inputs": "Hello", "parameters": map[string]any{"max_new_tokens": 3}}, probe, nil); err != nil {
		t.Fatal(err)
	}

	for _, url := range []string{metricURL, apiURL} {
		// Wait for the events, then for another few health probes (every
		// 200 ms): the counts must stay exactly at what was sent.
		deadline := time.Now().Add(10 * time.Second)
		var diff []string
		for {
			after, err := obsSnapshot(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			diff = diff[:0]
			for _, n := range obsCounted {
				if got := after[n] - before[url][n]; got != want[n] {
					diff = append(diff, fmt.Sprintf("%s +%v, want +%v", n, got, want[n]))
				}
			}
			if len(diff) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(diff) > 0 {
			t.Errorf("%s after the requests:\n  %s", url, strings.Join(diff, "\n  "))
		}
	}
	mfs, _, err = obsScrape(ctx, metricURL)
	if err != nil {
		t.Fatal(err)
	}
	probesBefore, _ := obsValue(mfs, "lightllm_batch_inference_duration_count")
	time.Sleep(700 * time.Millisecond)
	after, err := obsSnapshot(ctx, metricURL)
	if err != nil {
		t.Fatal(err)
	}
	mfs, _, _ = obsScrape(ctx, metricURL)
	probesAfter, _ := obsValue(mfs, "lightllm_batch_inference_duration_count")
	if probesAfter == probesBefore {
		t.Errorf("no engine step in 700 ms of idle: the health role's probes (every 200 ms) did not run")
	}
	if n := after["lightllm_request_count_total"] - before[metricURL]["lightllm_request_count_total"]; n != want["lightllm_request_count_total"] {
		t.Errorf("health probes were counted as requests: request_count +%v, want +%v", n, want["lightllm_request_count_total"])
	}
	// The router times every admission, health probes included (it cannot
	// tell them apart), so the queue histogram counts at least the requests.
	if q, _ := obsValue(mfs, "lightllm_request_queue_duration_count"); q-queuedBefore < want["lightllm_request_count_total"] {
		t.Errorf("queue duration observed %v times, fewer than the %v requests", q-queuedBefore, want["lightllm_request_count_total"])
	}
	if v, ok := obsValue(mfs, "lightllm_cache_hit_rate"); !ok || v != hitRate {
		t.Errorf("cache hit rate %v (present %v), want %v of the last request", v, ok, hitRate)
	}
	for _, n := range []string{"lightllm_gen_throughput", "lightllm_queue_size", "lightllm_num_running_reqs", "lightllm_batch_current_size",
		"lightllm_batch_pause_size", "lightllm_kv_usage", "lightllm_queue_oldest_wait_seconds", "lightllm_health_status"} {
		if _, ok := obsValue(mfs, n); !ok {
			t.Errorf("gauge %s was never set", n)
		}
	}
	t.Logf("counted %v requests, %v prompt and %v generated tokens; %v engine steps during 700 ms of idle (probes)",
		want["lightllm_request_count_total"], want["lightllm_prompt_tokens_total"], want["lightllm_generation_tokens_total"], probesAfter-probesBefore)
}

// obsBatch runs n concurrent greedy requests and returns how long the
// batch took; any failure is returned.
func obsBatch(ctx context.Context, s *server, n int) (time.Duration, error) {
	start := time.Now()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r obsNative
			body := map[string]any{"inputs": chaosPrompts()[i%32], "parameters": map[string]any{"max_new_tokens": 48, "ignore_eos": true}}
			if _, err := obsPost(ctx, s.base+"/generate", body, nil, &r); err != nil {
				errs <- err
			} else if r.Count != 48 {
				errs <- fmt.Errorf("%d tokens, want 48", r.Count)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return time.Since(start), <-errs
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// obsMetricRoleDown times request batches with the metric role up, hung
// (SIGSTOP) and killed (kill -9, kept down by the restart backoff), then
// checks metrics flow again after its restart.
func obsMetricRoleDown(ctx context.Context, t *testing.T, s *server, apiURL, metricURL string) {
	const batch = 8
	var up []time.Duration
	for range 3 {
		d, err := obsBatch(ctx, s, batch)
		if err != nil {
			t.Fatalf("metric role up: %v", err)
		}
		up = append(up, d)
	}
	limit := 2*median(up) + 250*time.Millisecond

	pid := rolePids(s.status())[config.RoleMetric]
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT) // on an early failure; a no-op once killed
	var hung []time.Duration
	for range 3 {
		d, err := obsBatch(ctx, s, batch)
		if err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("metric role hung: %v", err)
		}
		hung = append(hung, d)
	}
	if _, took, err := obsScrape(ctx, apiURL); err != nil || took > 800*time.Millisecond {
		t.Errorf("API port /metrics with the metric role hung: %v after %v", err, took)
	}
	old := s.kill9(config.RoleMetric) // the stopped process dies too
	if old != pid {
		t.Fatalf("metric pid changed while stopped: %d → %d", pid, old)
	}
	var down []time.Duration
	for range 3 {
		d, err := obsBatch(ctx, s, batch)
		if err != nil {
			t.Fatalf("metric role killed: %v", err)
		}
		if p := rolePids(s.status())[config.RoleMetric]; p != 0 && p != old {
			break // restarted: later batches would not time "down"
		}
		down = append(down, d)
	}
	t.Logf("batch of %d requests: metric role up %v, hung %v, killed %v (limit %v)", batch, up, hung, down, limit)
	if len(down) == 0 {
		t.Errorf("the metric role restarted before one batch finished; the 2 s restart backoff did not hold")
	}
	for name, ds := range map[string][]time.Duration{"hung": hung, "killed": down} {
		if len(ds) > 0 && median(ds) > limit {
			t.Errorf("metric role %s: batches took %v (median %v), up %v: serving slowed", name, ds, median(ds), up)
		}
	}

	s.waitRestarted(config.RoleMetric, old, 15*time.Second)
	for _, url := range []string{metricURL, apiURL} {
		before := obsStable(ctx, t, url)
		if _, err := obsBatch(ctx, s, 3); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			now, err := obsSnapshot(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			got := now["lightllm_request_count_total"] - before["lightllm_request_count_total"]
			tokens := now["lightllm_generation_tokens_total"] - before["lightllm_generation_tokens_total"]
			if got == 3 && tokens == 3*48 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s after the metric role's restart: request_count +%v, generation tokens +%v, want +3 and +%d", url, got, tokens, 3*48)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// obsLoad reads the router's and infer's own counters from shm.
type obsLoad struct {
	waiting, running int64
	kv               float64
}

func obsReadLoad(l *shm.Load) obsLoad {
	out := obsLoad{waiting: l.Waiting.Load(), running: l.Running.Load()}
	if c := l.MaxTotalTokenNum.Load(); c > 0 {
		out.kv = min(max(float64(c-l.FreeKVTokens.Load()-l.EvictableKVTokens.Load())/float64(c), 0), 1)
	}
	return out
}

// obsBetween reports whether v lies between a and b.
func obsBetween(v, a, b float64) bool { return v >= min(a, b)-1e-9 && v <= max(a, b)+1e-9 }

// obsLiveGauges scrapes the API port every 50 ms while 24 streams run on 8
// slots, and checks each live gauge against the shm counters read just
// before and just after the scrape (the gauge must be one of the values the
// router and infer published meanwhile), and the vLLM names against ours.
func obsLiveGauges(ctx context.Context, t *testing.T, s *server, apiURL string) {
	region, err := shm.AttachFile(filepath.Join(s.shmDir, shm.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	defer region.Close()
	load := region.Load()

	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var loadErr error
	var once sync.Once
	// The load lasts until enough scrapes are in, however fast the engine
	// is: each client sends requests one after another until then.
	const wantScrapes = 20
	enough := make(chan struct{})
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := map[string]any{"inputs": chaosPrompts()[i], "parameters": map[string]any{"max_new_tokens": 160, "ignore_eos": true}}
			for {
				if _, err := obsPost(lctx, s.base+"/generate", body, nil, nil); err != nil {
					once.Do(func() { loadErr = err })
					return
				}
				select {
				case <-enough:
					return
				default:
				}
			}
		}()
	}
	loadDone := make(chan struct{})
	go func() { wg.Wait(); close(loadDone) }()

	type sample struct {
		before, after, got obsLoad
		took               time.Duration
	}
	var samples []sample
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-loadDone:
			running = false
		case <-tick.C:
		}
		b := obsReadLoad(load)
		mfs, took, err := obsScrape(ctx, apiURL)
		a := obsReadLoad(load)
		if err != nil {
			t.Fatal(err)
		}
		// Ours and vLLM's names come from one read of the load: equal.
		pair := func(ours, vllm string) float64 {
			v, ok := obsValue(mfs, ours)
			vv, vok := obsValue(mfs, vllm)
			if !ok || !vok || v != vv {
				t.Fatalf("%s = %v (%v), %s = %v (%v): want both, equal", ours, v, ok, vllm, vv, vok)
			}
			return v
		}
		got := obsLoad{
			waiting: int64(pair("lightllm_num_requests_waiting", "vllm:num_requests_waiting")),
			running: int64(pair("lightllm_num_requests_running", "vllm:num_requests_running")),
			kv:      pair("lightllm_kv_cache_usage_perc", "vllm:kv_cache_usage_perc"),
		}
		samples = append(samples, sample{b, a, got, took})
		if len(samples) == wantScrapes {
			close(enough)
		}
	}
	if loadErr != nil {
		t.Fatalf("load request failed: %v", loadErr)
	}

	// KV usage is not monotonic within a step (a finished request frees its
	// tokens while the batch's new tokens are allocated), so a scrape taken
	// mid-step can sit a step's churn outside the before/after pair: 8
	// running requests plus a prefill chunk is a few percent of the pool.
	const kvChurn = 0.05
	var off []string
	var sawWaiting, sawRunning, sawKV bool
	var tooks []time.Duration
	for i, sm := range samples {
		tooks = append(tooks, sm.took)
		sawWaiting = sawWaiting || sm.got.waiting > 0
		sawRunning = sawRunning || sm.got.running > 0
		sawKV = sawKV || sm.got.kv > 0
		if !obsBetween(float64(sm.got.waiting), float64(sm.before.waiting), float64(sm.after.waiting)) ||
			!obsBetween(float64(sm.got.running), float64(sm.before.running), float64(sm.after.running)) ||
			!obsBetween(sm.got.kv, min(sm.before.kv, sm.after.kv)-kvChurn, max(sm.before.kv, sm.after.kv)+kvChurn) {
			off = append(off, fmt.Sprintf("#%d scraped %+v, shm before %+v after %+v", i, sm.got, sm.before, sm.after))
		}
	}
	t.Logf("%d scrapes under load: median %v, max %v; %d outside the shm counters' range", len(samples), median(tooks), slices.Max(tooks), len(off))
	switch {
	case len(samples) < 10:
		t.Errorf("only %d scrapes during the load", len(samples))
	case !sawWaiting || !sawRunning || !sawKV:
		t.Errorf("the gauges never moved (waiting %v, running %v, kv %v): the load did not load", sawWaiting, sawRunning, sawKV)
	case len(off) > max(1, len(samples)/10):
		// A counter that moves away and back within one scrape escapes
		// the before/after range; more than a few such is a wrong gauge.
		t.Errorf("%d of %d scrapes disagree with the router's and infer's counters:\n  %s", len(off), len(samples), strings.Join(off, "\n  "))
	}
	if m := median(tooks); m > 50*time.Millisecond {
		t.Errorf("median scrape of the API port took %v: too slow for a 50 ms scrape interval", m)
	}

	// Idle again: every gauge returns to 0.
	deadline := time.Now().Add(3 * time.Second)
	for {
		mfs, _, err := obsScrape(ctx, apiURL)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := obsValue(mfs, "lightllm_num_requests_waiting")
		r, _ := obsValue(mfs, "lightllm_num_requests_running")
		kv, _ := obsValue(mfs, "lightllm_kv_cache_usage_perc")
		if w == 0 && r == 0 && kv == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("3 s after the load: waiting %v running %v kv %v, want 0", w, r, kv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
