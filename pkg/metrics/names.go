package metrics

import (
	"fmt"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/config"
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
	RequestPreemptions  = "lightllm_request_preemptions"   // running requests evicted for KV and recomputed later (infer)
	CacheEvictedTokens  = "lightllm_cache_evicted_tokens"  // prompt-cache tokens evicted to make room (infer)
	BatchInferenceCount = "lightllm_batch_inference_count" // steps, label method=prefill|decode (infer)
	// RoleRestarts is not sent by anyone: the metric role reads the
	// supervisor's restart counts at scrape time (see Options.Status), so
	// the count survives the restart of the metric role itself.
	RoleRestarts = "lightllm_role_restarts"
	// EventsDropped counts metric events a client dropped because the metric
	// role was down or slow (label role); reported once it is reachable again.
	EventsDropped = "lightllm_metric_events_dropped"

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
	QueueSize              = "lightllm_queue_size"                // router
	BatchCurrentSize       = "lightllm_batch_current_size"        // router
	BatchPauseSize         = "lightllm_batch_pause_size"          // router
	BatchCurrentMaxTokens  = "lightllm_batch_current_max_tokens"  // router
	NumRunningReqs         = "lightllm_num_running_reqs"          // router
	CacheHitRate           = "lightllm_cache_hit_rate"            // of the latest finished request
	GenThroughput          = "lightllm_gen_throughput"            // tokens/s of the latest finished request
	KVUsage                = "lightllm_kv_usage"                  // used KV tokens / capacity, 0..1 (infer)
	QueueOldestWaitSeconds = "lightllm_queue_oldest_wait_seconds" // age of the oldest waiting request (router)

	// Gauges of the health role.
	HealthStatus      = "lightllm_health_status" // 0 healthy, 1 degraded, 2 unhealthy
	GPUMemoryUsed     = "lightllm_gpu_memory_used_bytes"
	GPUMemoryTotal    = "lightllm_gpu_memory_total_bytes"
	GPUUtilization    = "lightllm_gpu_utilization_ratio" // 0..1
	GPUTemperature    = "lightllm_gpu_temperature_celsius"
	GPUECCUncorrected = "lightllm_gpu_ecc_uncorrected_errors" // volatile count since the driver loaded
)

// Kind is the type of a metric.
type Kind uint8

// Kinds.
const (
	KindCounter Kind = iota + 1
	KindGauge
	KindHistogram
)

func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
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
	kind    Kind
	help    string
	label   string // the extra label besides model_name, "" for none
	buckets bucketKind
	// values bounds the extra label's values, so a confused sender cannot
	// create unbounded series.
	values []string
}

// exportName is the Prometheus name: counters end in _total.
func (d def) exportName() string {
	if d.kind == KindCounter && !strings.HasSuffix(d.name, "_total") {
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
		{RequestCount, KindCounter, "The total number of requests", "", bucketsNone, nil},
		{RequestSuccess, KindCounter, "The number of successful requests", "", bucketsNone, nil},
		{RequestFailure, KindCounter, "The number of failed requests", "", bucketsNone, nil},
		{PromptTokens, KindCounter, "Total number of prefill tokens processed", "", bucketsNone, nil},
		{GenerationTokens, KindCounter, "Total number of generation tokens processed", "", bucketsNone, nil},
		{RequestPreemptions, KindCounter, "Running requests evicted for KV space and recomputed later", "", bucketsNone, nil},
		{CacheEvictedTokens, KindCounter, "Prompt-cache tokens evicted to make room", "", bucketsNone, nil},
		{BatchInferenceCount, KindCounter, "The number of prefill steps / decode steps", "method", bucketsNone, methods()},
		{EventsDropped, KindCounter, "Metric events dropped by a role because the metric role was unreachable", "role", bucketsNone, roleNames()},

		{RequestInputLength, KindHistogram, "Length of the input tokens", "", bucketsTokens, nil},
		{CacheLength, KindHistogram, "Length of tokens which hit prompt cache", "", bucketsTokens, nil},
		{RequestMaxNewTokens, KindHistogram, "Max new token", "", bucketsTokens, nil},
		{RequestGeneratedTokens, KindHistogram, "Number of generated tokens", "", bucketsTokens, nil},
		{RequestDuration, KindHistogram, "Duration of the request (s)", "", bucketsDuration, nil},
		{RequestInferenceDuration, KindHistogram, "Inference time of the request", "", bucketsDuration, nil},
		{RequestTimePerToken, KindHistogram, "Per token time of the request", "", bucketsDuration, nil},
		{RequestFirstTokenDuration, KindHistogram, "First token time of the request", "", bucketsDuration, nil},
		{RequestQueueDuration, KindHistogram, "Queue duration of requests (arrival to admission, s)", "", bucketsDuration, nil},
		{CacheRatio, KindHistogram, "cache length / input_length", "", bucketsRatio, nil},
		{BatchInferenceDuration, KindHistogram, "Inference time of prefill step / decode step", "method", bucketsDuration, methods()},

		{QueueSize, KindGauge, "Queue size", "", bucketsNone, nil},
		{BatchCurrentSize, KindGauge, "Current batch size", "", bucketsNone, nil},
		{BatchPauseSize, KindGauge, "The number of pause requests", "", bucketsNone, nil},
		{BatchCurrentMaxTokens, KindGauge, "dynamic max token used for current batch", "", bucketsNone, nil},
		{NumRunningReqs, KindGauge, "Number of running requests", "", bucketsNone, nil},
		{CacheHitRate, KindGauge, "Prefix cache hit rate of latest completed request", "", bucketsNone, nil},
		{GenThroughput, KindGauge, "Generation throughput of latest completed request (tokens/s)", "", bucketsNone, nil},
		{KVUsage, KindGauge, "KV cache usage: used tokens / capacity (0..1)", "", bucketsNone, nil},
		{QueueOldestWaitSeconds, KindGauge, "How long the oldest waiting request has been queued (s)", "", bucketsNone, nil},
		{HealthStatus, KindGauge, "Health of the instance as the health role sees it: 0 healthy, 1 degraded, 2 unhealthy", "", bucketsNone, nil},
		{GPUMemoryUsed, KindGauge, "GPU memory in use (bytes)", "", bucketsNone, nil},
		{GPUMemoryTotal, KindGauge, "GPU memory (bytes)", "", bucketsNone, nil},
		{GPUUtilization, KindGauge, "Fraction of time a kernel ran on the GPU over the last sample period", "", bucketsNone, nil},
		{GPUTemperature, KindGauge, "GPU temperature (°C)", "", bucketsNone, nil},
		{GPUECCUncorrected, KindGauge, "Uncorrected ECC errors since the driver loaded (volatile count)", "", bucketsNone, nil},
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
