package metrics

import (
	"fmt"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/ipc"
)

// Metric names. Each is the name a role passes to the Client; the exported
// Prometheus name is the same, with counters getting the "_total" suffix
// Python's prometheus_client adds (so lightllm_request_count is exported as
// lightllm_request_count_total and lightllm_prompt_tokens_total unchanged),
// which keeps dashboards written for LightLLM working.
const (
	// Counters (apiserver).
	RequestCount     = "lightllm_request_count"       // admitted generate requests
	RequestSuccess   = "lightllm_request_success"     // finished without error
	RequestFailure   = "lightllm_request_failure"     // every error response
	PromptTokens     = "lightllm_prompt_tokens_total" // prompt tokens of finished requests
	GenerationTokens = "lightllm_generation_tokens_total"

	// Counters LightLLM lacks.
	RequestAborted      = "lightllm_request_aborted"       // ended unfinished: the client went away (apiserver)
	RequestPreemptions  = "lightllm_request_preemptions"   // running requests evicted for KV and recomputed later (infer)
	CacheEvictedTokens  = "lightllm_cache_evicted_tokens"  // prompt-cache tokens evicted to make room (infer)
	BatchInferenceCount = "lightllm_batch_inference_count" // steps, label method=prefill|decode (infer)
	// RoleRestarts is not sent by anyone: the metric role reads the
	// supervisor's restart counts at scrape time (see Options.Status), so
	// the count survives the restart of the metric role itself.
	RoleRestarts = "lightllm_role_restarts"
	// RoleCrashLooping comes from the same supervisor status (a gauge).
	RoleCrashLooping = "lightllm_role_crash_looping"

	// Histograms (apiserver unless noted).
	RequestInputLength        = "lightllm_request_input_length"
	CacheLength               = "lightllm_cache_length" // prompt tokens served from the prompt cache
	RequestMaxNewTokens       = "lightllm_request_max_new_tokens"
	RequestGeneratedTokens    = "lightllm_request_generated_tokens"
	RequestDuration           = "lightllm_request_duration" // arrival to last token
	RequestInferenceDuration  = "lightllm_request_inference_duration"
	RequestTimePerToken       = "lightllm_request_mean_time_per_token_duration"
	RequestFirstTokenDuration = "lightllm_request_first_token_duration" // TTFT
	// RequestQueueDuration is arrival → admission (router). LightLLM defines
	// it as lightllm_request_queue_duration_bucket and never emits it; the
	// _bucket suffix is dropped here so the series are not named *_bucket_bucket.
	RequestQueueDuration   = "lightllm_request_queue_duration"
	CacheRatio             = "lightllm_cache_ratio"              // cache length / input length
	BatchInferenceDuration = "lightllm_batch_inference_duration" // one step, label method (infer)

	// Gauges.
	QueueSize             = "lightllm_queue_size"               // router
	BatchCurrentSize      = "lightllm_batch_current_size"       // router
	BatchPauseSize        = "lightllm_batch_pause_size"         // router
	BatchCurrentMaxTokens = "lightllm_batch_current_max_tokens" // router
	NumRunningReqs        = "lightllm_num_running_reqs"         // router
	CacheHitRate          = "lightllm_cache_hit_rate"           // of the latest finished request
	GenThroughput         = "lightllm_gen_throughput"           // tokens/s of the latest finished request
	KVUsage               = "lightllm_kv_usage"                 // used KV tokens / capacity, 0..1 (infer)
	// KVCacheBytes is the memory of the K/V store now; with sliding-window
	// layers their part follows the local slots held (KVLocalTokens).
	KVCacheBytes           = "lightllm_kv_cache_bytes"            // (infer)
	KVLocalTokens          = "lightllm_kv_local_tokens"           // local-layer slots held, by requests and the prompt cache (infer)
	QueueOldestWaitSeconds = "lightllm_queue_oldest_wait_seconds" // age of the oldest waiting request (router)
	// EventsDropped is the number of metric events a role's current process
	// dropped because the metric role was down or slow (label role); every
	// Client reports it every few seconds.
	EventsDropped = "lightllm_metric_events_dropped"

	// Gauges of the health role.
	HealthStatus      = "lightllm_health_status" // 0 healthy, 1 degraded, 2 unhealthy
	GPUMemoryUsed     = "lightllm_gpu_memory_used_bytes"
	GPUMemoryTotal    = "lightllm_gpu_memory_total_bytes"
	GPUUtilization    = "lightllm_gpu_utilization_ratio" // 0..1
	GPUTemperature    = "lightllm_gpu_temperature_celsius"
	GPUECCUncorrected = "lightllm_gpu_ecc_uncorrected_errors" // volatile count since the driver loaded
)

// kindName names a metric kind (label of lightllm_metric_events_received_total).
func kindName(k ipc.MetricKind) string {
	switch k {
	case ipc.CounterAdd:
		return "counter"
	case ipc.GaugeSet:
		return "gauge"
	case ipc.HistogramObserve:
		return "histogram"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// bucketKind picks a bucket layout; the token-count layouts depend on
// max_req_total_len, so definitions name a layout, not a slice.
type bucketKind uint8

const (
	bucketsNone     bucketKind = iota
	bucketsDuration            // 35 geometric buckets ×1.5 from 1.5 ms, as LightLLM
	bucketsTokens              // 101 linear buckets 0..max_req_total_len, as LightLLM
	bucketsRatio               // 0, 0.1, ..., 1.0
)

// def describes one metric the registry knows.
type def struct {
	name    string
	kind    ipc.MetricKind
	help    string
	label   string // the extra label besides model_name, "" for none
	buckets bucketKind
	// values bounds the extra label's values, so a confused sender cannot
	// create unbounded series.
	values []string
}

// exportName is the Prometheus name: counters end in _total.
func (d def) exportName() string {
	if d.kind == ipc.CounterAdd && !strings.HasSuffix(d.name, "_total") {
		return d.name + "_total"
	}
	return d.name
}

// Values of the method label.
const (
	MethodPrefill = "prefill"
	MethodDecode  = "decode"
)

func methods() []string { return []string{MethodPrefill, MethodDecode} }

func roleNames() []string { return append(config.AllRoles(), "supervisor") }

// defs is every metric that may arrive as an event, with LightLLM's help
// strings where LightLLM has the metric.
func defs() []def {
	return []def{
		{RequestCount, ipc.CounterAdd, "The total number of requests", "", bucketsNone, nil},
		{RequestSuccess, ipc.CounterAdd, "The number of successful requests", "", bucketsNone, nil},
		{RequestFailure, ipc.CounterAdd, "The number of failed requests", "", bucketsNone, nil},
		{PromptTokens, ipc.CounterAdd, "Total number of prefill tokens processed", "", bucketsNone, nil},
		{GenerationTokens, ipc.CounterAdd, "Total number of generation tokens processed", "", bucketsNone, nil},
		{RequestAborted, ipc.CounterAdd, "Requests that ended unfinished because the client went away (disconnect, closed stream)", "", bucketsNone, nil},
		{RequestPreemptions, ipc.CounterAdd, "Running requests evicted for KV space and recomputed later", "", bucketsNone, nil},
		{CacheEvictedTokens, ipc.CounterAdd, "Prompt-cache tokens evicted to make room", "", bucketsNone, nil},
		{BatchInferenceCount, ipc.CounterAdd, "The number of prefill steps / decode steps", "method", bucketsNone, methods()},

		{RequestInputLength, ipc.HistogramObserve, "Length of the input tokens", "", bucketsTokens, nil},
		{CacheLength, ipc.HistogramObserve, "Length of tokens which hit prompt cache", "", bucketsTokens, nil},
		{RequestMaxNewTokens, ipc.HistogramObserve, "Max new token", "", bucketsTokens, nil},
		{RequestGeneratedTokens, ipc.HistogramObserve, "Number of generated tokens", "", bucketsTokens, nil},
		{RequestDuration, ipc.HistogramObserve, "Duration of the request (s)", "", bucketsDuration, nil},
		{RequestInferenceDuration, ipc.HistogramObserve, "Inference time of the request", "", bucketsDuration, nil},
		{RequestTimePerToken, ipc.HistogramObserve, "Per token time of the request", "", bucketsDuration, nil},
		{RequestFirstTokenDuration, ipc.HistogramObserve, "First token time of the request", "", bucketsDuration, nil},
		{RequestQueueDuration, ipc.HistogramObserve, "Queue duration of requests (arrival to admission, s)", "", bucketsDuration, nil},
		{CacheRatio, ipc.HistogramObserve, "cache length / input_length", "", bucketsRatio, nil},
		{BatchInferenceDuration, ipc.HistogramObserve, "Inference time of prefill step / decode step", "method", bucketsDuration, methods()},

		{QueueSize, ipc.GaugeSet, "Queue size", "", bucketsNone, nil},
		{BatchCurrentSize, ipc.GaugeSet, "Current batch size", "", bucketsNone, nil},
		{BatchPauseSize, ipc.GaugeSet, "The number of pause requests", "", bucketsNone, nil},
		{BatchCurrentMaxTokens, ipc.GaugeSet, "dynamic max token used for current batch", "", bucketsNone, nil},
		{NumRunningReqs, ipc.GaugeSet, "Number of running requests", "", bucketsNone, nil},
		{CacheHitRate, ipc.GaugeSet, "Prefix cache hit rate of latest completed request", "", bucketsNone, nil},
		{GenThroughput, ipc.GaugeSet, "Generation throughput of latest completed request (tokens/s)", "", bucketsNone, nil},
		{KVUsage, ipc.GaugeSet, "KV cache usage: used tokens / capacity (0..1)", "", bucketsNone, nil},
		{KVCacheBytes, ipc.GaugeSet, "Memory of the KV store (bytes); sliding-window layers' part follows the window slots held", "", bucketsNone, nil},
		{KVLocalTokens, ipc.GaugeSet, "Sliding-window layers' KV slots held (requests' windows and prompt-cache tails)", "", bucketsNone, nil},
		{QueueOldestWaitSeconds, ipc.GaugeSet, "How long the oldest waiting request has been queued (s)", "", bucketsNone, nil},
		{EventsDropped, ipc.GaugeSet, "Metric events dropped by each role's current process because the metric role was unreachable", "role", bucketsNone, roleNames()},
		{HealthStatus, ipc.GaugeSet, "Health of the instance as the health role sees it: 0 healthy, 1 degraded, 2 unhealthy", "", bucketsNone, nil},
		{GPUMemoryUsed, ipc.GaugeSet, "GPU memory in use (bytes)", "", bucketsNone, nil},
		{GPUMemoryTotal, ipc.GaugeSet, "GPU memory (bytes)", "", bucketsNone, nil},
		{GPUUtilization, ipc.GaugeSet, "Fraction of time a kernel ran on the GPU over the last sample period", "", bucketsNone, nil},
		{GPUTemperature, ipc.GaugeSet, "GPU temperature (°C)", "", bucketsNone, nil},
		{GPUECCUncorrected, ipc.GaugeSet, "Uncorrected ECC errors since the driver loaded (volatile count)", "", bucketsNone, nil},
	}
}

// DurationBuckets are LightLLM's duration buckets: 35 values, 1.5 ms ×1.5^i.
func DurationBuckets() []float64 {
	out := make([]float64, 35)
	v := 0.001
	for i := range out {
		v *= 1.5
		out[i] = v
	}
	return out
}

// TokenBuckets are LightLLM's token-count buckets: maxLen/100 × i for i in
// 0..100 (101 values, the first 0).
func TokenBuckets(maxLen int) []float64 {
	if maxLen <= 0 {
		maxLen = 16384
	}
	out := make([]float64, 101)
	for i := range out {
		out[i] = float64(maxLen) / 100 * float64(i)
	}
	return out
}

// RatioBuckets are LightLLM's cache-ratio buckets 0, 0.1, ..., 1.0.
func RatioBuckets() []float64 {
	out := make([]float64, 11)
	for i := range out {
		out[i] = float64(i) / 10
	}
	return out
}
