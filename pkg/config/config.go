// Package config is the server configuration shared by the supervisor and
// every role process: a typed Config whose flags are named as LightLLM's
// (`--model_dir`, `--max_total_token_num`, ...) with LightLLM's defaults where
// they apply, resolved once (derived defaults from the model and the machine)
// and saved as JSON in the instance's run directory so that every role, however
// it was started, reads exactly the same values.
package config

import "time"

// Roles, in the order the supervisor starts them (see pkg/supervisor).
const (
	RoleMetric      = "metric"
	RoleRouter      = "router"
	RoleDetokenizer = "detokenizer"
	RoleInfer       = "infer"
	RoleAPIServer   = "apiserver"
	RoleHealth      = "health"
)

// AllRoles lists every role in launch order.
func AllRoles() []string {
	return []string{RoleMetric, RoleRouter, RoleDetokenizer, RoleInfer, RoleAPIServer, RoleHealth}
}

// IsRole reports whether name is a known role.
func IsRole(name string) bool {
	for _, r := range AllRoles() {
		if r == name {
			return true
		}
	}
	return false
}

// Backends of the infer role.
const (
	BackendCPU  = "cpu"
	BackendCUDA = "cuda"
	// BackendSynthetic is a deterministic test backend: it emits a
	// reproducible token stream at --synthetic_step_ms per step without
	// running the model. Pipeline tests and overhead benchmarks only.
	BackendSynthetic = "synthetic"
)

// Router admission policies (pkg/router implements them).
var routerPolicies = []string{"past_future", "past_future_ema", "conservative", "aggressive", "oracle"}

// Config is the whole server configuration. JSON keys equal flag names.
// Fields marked "resolved" are filled by Resolve when left zero.
type Config struct {
	// Instance and filesystem layout.
	Instance string `json:"instance"` // default: the port number
	RunDir   string `json:"run_dir"`  // default: $LIGHTLLM_RUN_DIR/<instance>, /run/lightllm/<instance>, /tmp/lightllm-<instance>
	ShmDir   string `json:"shm_dir"`  // default: ${LIGHTLLM_SHM_DIR:-/dev/shm}/lightllm-<instance>
	RunMode  string `json:"run_mode"` // only "normal" so far

	// Model.
	ModelDir  string `json:"model_dir"` // HF directory or .gguf file
	ModelName string `json:"model_name"`
	DataType  string `json:"data_type"` // resolved: fp16|bf16|fp32 from the model
	EosID     []int  `json:"eos_id"`    // resolved from the model
	Backend   string `json:"backend"`   // cpu|cuda|synthetic
	// SyntheticStepMs is the step time of the synthetic backend.
	SyntheticStepMs float64 `json:"synthetic_step_ms"`
	Threads         int     `json:"threads"` // CPU backend worker threads; 0 = all cores
	// MmapWeights: the CPU backend computes from the model file's mapping
	// instead of huge-page copies of its matrices (model.LoadOptions).
	MmapWeights bool `json:"mmap_weights"`
	// KVCacheDtype is the CPU backend's KV cache element type: "" or f16
	// (default), q8_0 (llama.cpp's -ctk/-ctv q8_0).
	KVCacheDtype string `json:"kv_cache_dtype"`
	TP           int    `json:"tp"`
	GPUUUID      string `json:"gpu_uuid"`

	// HTTP.
	Host string `json:"host"`
	Port int    `json:"port"`

	// API. ServedModelName are the names the OpenAI API serves the model
	// under (vLLM's --served_model_name; the first one is reported);
	// requests naming another model get 404. APIKey, when set, are the
	// bearer tokens every endpoint but the probes requires (a secret:
	// redacted wherever the config is shown, and the saved config is then
	// readable by its owner only); MetricsNeedAPIKey puts /metrics behind
	// them too. AllowedOrigins enables CORS for those origins ("*": any).
	ServedModelName   []string `json:"served_model_name,omitempty"`
	APIKey            []string `json:"api_key,omitempty"`
	MetricsNeedAPIKey bool     `json:"metrics_need_api_key,omitempty"`
	AllowedOrigins    []string `json:"allowed_origins,omitempty"`

	// Capacity and scheduling.
	MaxTotalTokenNum          int      `json:"max_total_token_num"`  // resolved: KV capacity in tokens
	MaxReqTotalLen            int      `json:"max_req_total_len"`    // resolved: from the model's context length
	BatchMaxTokens            int      `json:"batch_max_tokens"`     // resolved: 16384 (chunked) or max_req_total_len
	ChunkedPrefillSize        int      `json:"chunked_prefill_size"` // resolved: batch_max_tokens/2 (chunked) or max_req_total_len
	DisableChunkedPrefill     bool     `json:"disable_chunked_prefill"`
	RunningMaxReqSize         int      `json:"running_max_req_size"`
	MaxWaitingReqs            int      `json:"max_waiting_reqs"`
	RouterTokenRatio          float64  `json:"router_token_ratio"`
	RouterMaxWaitTokens       int      `json:"router_max_wait_tokens"`
	RouterPolicy              string   `json:"router_policy"`
	DisableAggressiveSchedule bool     `json:"disable_aggressive_schedule"`
	ScheduleTimeInterval      Duration `json:"schedule_time_interval"`
	MemFraction               float64  `json:"mem_fraction"`
	DisableDynamicPromptCache bool     `json:"disable_dynamic_prompt_cache"`
	GracefulTimeout           Duration `json:"graceful_timeout"`

	// Metrics and health.
	MetricPort        int      `json:"metric_port"` // resolved: a free port when 0
	MetricGateway     string   `json:"metric_gateway"`
	PushInterval      Duration `json:"push_interval"`
	JobName           string   `json:"job_name"`
	HealthInterval    Duration `json:"health_interval"`
	HealthTimeout     Duration `json:"health_timeout"`
	HealthFailures    int      `json:"health_failures"`
	HeartbeatInterval Duration `json:"heartbeat_interval"`
	HeartbeatTimeout  Duration `json:"heartbeat_timeout"` // 0 disables wedge detection
	// StallTimeout: a request-path role (router, infer, detokenizer) whose
	// loop has not turned for this long is reported stalled: /health and
	// /readiness answer 503 (the health role also flags it).
	StallTimeout Duration `json:"stall_timeout"`
	// UnavailableTimeout bounds how long requests wait for a request-path
	// role whose process is gone (restarting, crash-looping): new requests
	// wait up to this long and are then refused with 503 + Retry-After;
	// in-flight ones end with an error once it has been gone this long.
	UnavailableTimeout Duration `json:"unavailable_timeout"`
	// StatsInterval: infer logs a vLLM-style stats line (running, waiting,
	// KV usage, prompt and generation tokens/s, prefix-cache hit rate) this
	// often while there is activity; 0 turns it off.
	StatsInterval Duration `json:"stats_interval"`
	// StreamInterval is how long infer may hold generated tokens in the
	// slots before it wakes the detokenizer for them (issue 25): the tokens
	// of several steps then cross detokenizer, apiserver and client in one
	// wake-up each instead of one per step. A request's first token, its
	// end and an idle engine wake it at once, so time to first token and
	// the end of a stream are not delayed; the text is the same. 0 wakes
	// it after every step. Past PacedStreams requests the spacing grows in
	// proportion (StreamSpacing), so the pipeline's work per ring,
	// which grows with the streams, stays bounded.
	StreamInterval Duration `json:"stream_interval"`
	// Pooling is how /v1/embeddings pools the final hidden states: auto
	// (the model's sentence-transformers or GGUF pooling config; a model
	// without one serves no embeddings), or last, mean or cls for any
	// model (EmbeddingSpec).
	Pooling string `json:"pooling"`

	// MetricsVLLMCompat also serves the live gauges under vLLM's names
	// (vllm:num_requests_waiting, ...) on the API port's /metrics, which the
	// Gateway API Inference Extension's endpoint picker reads out of the box.
	MetricsVLLMCompat bool `json:"metrics_vllm_compat"`
	// ChatTemplate is a Jinja chat template file that replaces the model's
	// own (tokenizer_config.json / GGUF), as LightLLM's --chat_template.
	ChatTemplate string `json:"chat_template"`
	// ToolCallParser is the tool call format the model writes (hermes,
	// llama3_json, mistral); "" picks it from the chat template.
	ToolCallParser string `json:"tool_call_parser"`
	// ReasoningParser splits <think> blocks (qwen3, deepseek-r1) or
	// gpt-oss's analysis channel (gpt-oss) into reasoning_content; none
	// turns it off; "" picks gpt-oss or qwen3 from the chat template.
	ReasoningParser string `json:"reasoning_parser"`

	// Logging.
	LogLevel  string `json:"log_level"`
	LogFormat string `json:"log_format"` // auto|json|console

	// Supervisor.
	ReadyTimeout      Duration `json:"ready_timeout"`
	StopTimeout       Duration `json:"stop_timeout"`
	RestartBudget     int      `json:"restart_budget"`
	RestartWindow     Duration `json:"restart_window"`
	RestartBackoff    Duration `json:"restart_backoff"`
	RestartBackoffMax Duration `json:"restart_backoff_max"`
	// PipelineNice is the nice value the roles other than infer and the
	// apiserver lower themselves to (0 leaves them as launched): on a
	// machine with few cores the engine's step then gets a core first, and
	// the pipeline catches up in bigger writes instead of pre-empting it
	// (issue 25).
	PipelineNice int `json:"pipeline_nice"`
	// APIServerNice is the apiserver's own nice value, apart from the
	// pipeline's: it picks new requests up from their connections, and a
	// niced apiserver left them waiting for the core it shares with the
	// other roles (and a local client) for milliseconds, a share of every
	// time to first token that grows with the streams (issue 25).
	APIServerNice int `json:"apiserver_nice"`
	// PipelineSliceUS is the CPU slice, in µs, of every role but infer
	// under Linux's EEVDF scheduler (6.12 and later; earlier kernels ignore
	// it), 0 for the kernel's base slice. A role woken on a core that
	// infer's worker holds waits, at the kernel's base slice (1.4 ms on a
	// two-core host), until the worker's slice runs out; with a shorter
	// slice than the worker's it pre-empts it at once, runs its few tens
	// of µs and yields. Every hop of a request's first token is such a
	// wake-up (issue 25). Nice values still set the share of the core.
	PipelineSliceUS int `json:"pipeline_slice_us"`
	// PinCPUs splits the CPUs this instance may run on: infer's threads
	// get the first --threads of them, every other role the rest, so that
	// the pipeline's bursts after each step never run on the engine's
	// cores (issue 25). Off by default: two instances on one host would
	// both pin infer to the same first CPUs.
	PinCPUs bool `json:"pin_cpus"`

	// Set by Resolve.
	Resolved    bool   `json:"resolved"`
	ResolvedKey string `json:"resolved_key,omitempty"` // hash of the unresolved input, see LoadShared
	// KVBytesPerToken is what max_total_token_num was derived from (0 when set by hand).
	KVBytesPerToken int64 `json:"kv_bytes_per_token,omitempty"`
}

// DefaultConfig returns the defaults: LightLLM's (HEAD) where the flag exists
// there, otherwise what an operator of a single-node server would expect.
func DefaultConfig() Config {
	return Config{
		RunMode:              "normal",
		ModelName:            "default_model_name",
		Backend:              BackendCPU,
		SyntheticStepMs:      10,
		TP:                   1,
		Host:                 "127.0.0.1",
		Port:                 8000,
		RunningMaxReqSize:    256,
		MaxWaitingReqs:       1024,
		RouterTokenRatio:     0.85,
		RouterMaxWaitTokens:  1,
		RouterPolicy:         "past_future",
		ScheduleTimeInterval: Duration(30 * time.Millisecond),
		MemFraction:          0.8,
		// LightLLM waits 60 s for the HTTP server after SIGTERM.
		GracefulTimeout: Duration(60 * time.Second),
		PushInterval:    Duration(10 * time.Second),
		JobName:         "lightllm",
		// LightLLM probes every 88 s; we restart single roles instead of
		// killing the server, so detecting faults sooner is cheap.
		HealthInterval:    Duration(10 * time.Second),
		StatsInterval:     Duration(10 * time.Second), // vLLM's log_stats interval
		StreamInterval:    Duration(10 * time.Millisecond),
		Pooling:           PoolingAuto,
		HealthTimeout:     Duration(200 * time.Second), // LightLLM HEALTH_TIMEOUT
		HealthFailures:    3,                           // LightLLM's threshold
		HeartbeatInterval: Duration(time.Second),
		HeartbeatTimeout:  Duration(30 * time.Second),
		// A role's loop turns every few ms, or every 20-30 ms idle; one
		// step of a big model on a CPU may take seconds (raise it then).
		StallTimeout: Duration(3 * time.Second),
		// Longer than a restart of a small model takes after one kill,
		// shorter than a client's patience.
		UnavailableTimeout: Duration(8 * time.Second),
		LogLevel:           "info",
		LogFormat:          "auto",
		ReadyTimeout:       Duration(5 * time.Minute),
		StopTimeout:        Duration(10 * time.Second),
		RestartBudget:      0, // degrade, don't die: retry a failing role forever
		RestartWindow:      Duration(10 * time.Minute),
		RestartBackoff:     Duration(250 * time.Millisecond),
		// A crash-looping role is retried this often for good: it bounds
		// how long a fixed cause (a model file restored) goes unnoticed.
		RestartBackoffMax: Duration(10 * time.Second),
		PipelineNice:      5,
		PipelineSliceUS:   100,
	}
}

// IdleWait is how long a pipeline role's loop sleeps on its doorbell while
// nothing is due: whatever it waits for rings the bell, so the timeout
// only paces the periodic checks (a peer that restarted, an announcement
// that never came). Each timeout is a wake-up of the role and of its Go
// runtime's sysmon, which on a machine with few cores pre-empts infer's
// workers (issue 25). 200 ms, or a quarter of StallTimeout when that is
// shorter, so an idle loop still turns well within it.
func (c *Config) IdleWait() time.Duration {
	return min(200*time.Millisecond, c.StallTimeout.D()/4)
}

// PacedStreams is how many streams one hand-over of generated tokens per
// StreamInterval is sized for: with more, hand-overs are spaced further
// apart in proportion (StreamSpacing). 32 rather than 64: the apiserver
// and the benchmark client spend ~15-30% less CPU per token at 64 and 256
// streams of stories260K on two cores, and the server's TPOT growth from
// 64 to 256 streams is ~4% lower against the engine's step (40-48 paired
// runs a side at each thread setting, docs/performance.md), while up to
// 32 streams, where a hand-over is cheap, nothing changes.
const PacedStreams = 32

// StreamSpacing is the least time between two hand-overs of a stream's
// generated tokens to the pipeline while n requests run: interval
// (StreamInterval), stretched by n/PacedStreams beyond PacedStreams. A
// hand-over costs work per stream with new tokens (the detokenizer's
// pass, the apiserver's write, the client's read: 20-50 µs each on the
// 2-core dev box), so at a fixed spacing that work grows with n until, at
// 256 streams of stories260K, where a step outlasts the interval and every
// step was handed over, it took a quarter of the step from the model's
// threads (issue 25). Spacing in proportion to n bounds it to about one
// PacedStreams-stream hand-over per interval; each stream then gets its
// tokens in chunks, at most n/PacedStreams x interval apart (20 ms at 64
// streams, 80 ms at 256 by default). interval 0 hands over after every
// step.
func StreamSpacing(interval time.Duration, n int) time.Duration {
	if n <= PacedStreams {
		return interval
	}
	return interval * time.Duration(n) / PacedStreams
}
