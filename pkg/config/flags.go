package config

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Flags is a Config bound to a pflag.FlagSet, plus the two flags that are not
// configuration: --config FILE and --check-config.
type Flags struct {
	fs          *pflag.FlagSet
	cfg         Config
	configFile  string
	checkConfig bool
}

// RegisterFlags registers every configuration flag (named as LightLLM's) on
// fs, with DefaultConfig values, and returns the handle that turns the parsed
// flags into a Config. `lightllm launch` and every role binary call it, so
// they accept the same flags.
func RegisterFlags(fs *pflag.FlagSet) *Flags {
	f := &Flags{fs: fs, cfg: DefaultConfig()}
	c := &f.cfg
	fs.SetNormalizeFunc(SnakeCase)
	fs.StringVar(&f.configFile, "config", "", "read the configuration from this JSON file (flags given explicitly override it)")
	fs.BoolVar(&f.checkConfig, "check_config", false, "validate and resolve the configuration, print it, and exit")

	fs.StringVar(&c.Instance, "instance", c.Instance, "instance name: prefixes the run dir, shm dir and sockets (default: the port)")
	fs.StringVar(&c.RunDir, "run_dir", c.RunDir, "run directory (default: $LIGHTLLM_RUN_DIR/<instance>, /run/lightllm/<instance>, or /tmp/lightllm-<instance>)")
	fs.StringVar(&c.ShmDir, "shm_dir", c.ShmDir, "shared-memory directory (default: ${LIGHTLLM_SHM_DIR:-/dev/shm}/lightllm-<instance>)")
	fs.StringVar(&c.RunMode, "run_mode", c.RunMode, "run mode (only normal)")

	fs.StringVar(&c.ModelDir, "model_dir", c.ModelDir, "model: a Hugging Face directory, a .gguf file, a Hub id org/name[@rev][:file.gguf], or builtin:tiny-random (random weights built in memory, meaningless text; smoke tests)")
	fs.StringVar(&c.ModelName, "model_name", c.ModelName, "model name reported by the API")
	fs.StringVar(&c.DataType, "data_type", c.DataType, "fp16|bf16|fp32 (default: from the model)")
	fs.Var(intList{&c.EosID}, "eos_id", "end-of-sequence token ids, comma separated (default: from the model)")
	fs.StringVar(&c.Backend, "backend", c.Backend, "infer backend: cpu|cuda|synthetic (synthetic = deterministic test backend)")
	fs.Float64Var(&c.SyntheticStepMs, "synthetic_step_ms", c.SyntheticStepMs, "step time of the synthetic test backend, ms")
	fs.IntVar(&c.Threads, "threads", c.Threads, "CPU backend threads (0 = all cores)")
	fs.BoolVar(&c.MmapWeights, "mmap_weights", c.MmapWeights, "CPU backend: compute from the model file's mapping instead of huge-page copies of the weights (shared page cache, slower decode)")
	fs.StringVar(&c.KVCacheDtype, "kv_cache_dtype", c.KVCacheDtype, "KV cache element type: f16 (default) or q8_0 (as llama.cpp's -ctk/-ctv q8_0: 34 bytes per 32 values, about 1.9x the tokens in the same memory; CPU backend)")
	fs.IntVar(&c.TP, "tp", c.TP, "tensor-parallel size")
	fs.StringVar(&c.GPUUUID, "gpu_uuid", c.GPUUUID, "pin the GPU with this NVML UUID")

	fs.StringVar(&c.Host, "host", c.Host, "HTTP bind address")
	fs.IntVar(&c.Port, "port", c.Port, "HTTP port")
	fs.Var(strList{&c.ServedModelName}, "served_model_name", "names the OpenAI API serves the model under, comma separated (the first is reported; others get 404 model_not_found)")
	fs.Var(strList{&c.APIKey}, "api_key", "require `Authorization: Bearer KEY` on every endpoint but /health, /healthz, /liveness, /readiness (comma separated keys; also $LIGHTLLM_API_KEY)")
	fs.BoolVar(&c.MetricsNeedAPIKey, "metrics_need_api_key", c.MetricsNeedAPIKey, "with --api_key, /metrics needs the key too (default: open for Prometheus)")
	fs.Var(strList{&c.AllowedOrigins}, "allowed_origins", "CORS: origins allowed to call the API from a browser, comma separated (\"*\" = any)")

	fs.IntVar(&c.MaxTotalTokenNum, "max_total_token_num", c.MaxTotalTokenNum, "KV cache capacity in tokens (0 = from available memory × mem_fraction)")
	fs.IntVar(&c.MaxReqTotalLen, "max_req_total_len", c.MaxReqTotalLen, "max input+output tokens per request (0 = the model's context length, fallback 16384)")
	fs.IntVar(&c.BatchMaxTokens, "batch_max_tokens", c.BatchMaxTokens, "per-step prefill token budget (0 = 16384, or max_req_total_len without chunked prefill)")
	fs.IntVar(&c.ChunkedPrefillSize, "chunked_prefill_size", c.ChunkedPrefillSize, "prefill chunk size in tokens (0 = batch_max_tokens/2)")
	fs.BoolVar(&c.DisableChunkedPrefill, "disable_chunked_prefill", c.DisableChunkedPrefill, "prefill each prompt in one step")
	fs.IntVar(&c.RunningMaxReqSize, "running_max_req_size", c.RunningMaxReqSize, "request slots: max requests in flight")
	fs.IntVar(&c.MaxWaitingReqs, "max_waiting_reqs", c.MaxWaitingReqs, "bound of the waiting queue; past it requests get 503/429")
	fs.Float64Var(&c.RouterTokenRatio, "router_token_ratio", c.RouterTokenRatio, "KV usage ratio above which the router considers the server busy")
	fs.IntVar(&c.RouterMaxWaitTokens, "router_max_wait_tokens", c.RouterMaxWaitTokens, "with --disable_aggressive_schedule, decode steps between prefills (at least 1); also enters the Past-Future estimate")
	fs.StringVar(&c.RouterPolicy, "router_policy", c.RouterPolicy, "admission policy: past_future|past_future_ema|conservative|aggressive|oracle")
	fs.BoolVar(&c.DisableAggressiveSchedule, "disable_aggressive_schedule", c.DisableAggressiveSchedule, "while requests decode, prefill new prompts only every router_max_wait_tokens steps (LightLLM's non-aggressive schedule)")
	fs.Var(&c.ScheduleTimeInterval, "schedule_time_interval", "router loop interval (seconds or a duration)")
	fs.Float64Var(&c.MemFraction, "mem_fraction", c.MemFraction, "fraction of available memory for the KV cache, in (0,1)")
	fs.BoolVar(&c.DisableDynamicPromptCache, "disable_dynamic_prompt_cache", c.DisableDynamicPromptCache, "disable the radix prompt cache")
	fs.Var(&c.GracefulTimeout, "graceful_timeout", "on SIGTERM, how long in-flight requests may finish")

	fs.IntVar(&c.MetricPort, "metric_port", c.MetricPort, "Prometheus port of the metric role (0 = a free port)")
	fs.StringVar(&c.MetricGateway, "metric_gateway", c.MetricGateway, "Pushgateway URL")
	fs.Var(&c.PushInterval, "push_interval", "Pushgateway push interval")
	fs.StringVar(&c.JobName, "job_name", c.JobName, "Pushgateway job name")
	fs.StringVar(&c.ChatTemplate, "chat_template", c.ChatTemplate, "Jinja chat template file replacing the model's own (for /v1/chat/completions)")
	fs.StringVar(&c.ToolCallParser, "tool_call_parser", c.ToolCallParser, "tool call format of the model: hermes, llama3_json, mistral (default: from the chat template)")
	fs.StringVar(&c.ReasoningParser, "reasoning_parser", c.ReasoningParser, "reasoning parser: qwen3, deepseek-r1, gpt-oss, none (default: gpt-oss when the chat template renders harmony channels, qwen3 when it renders <think> blocks)")
	fs.BoolVar(&c.MetricsVLLMCompat, "metrics_vllm_compat", c.MetricsVLLMCompat, "also serve the live gauges under vLLM's names (vllm:num_requests_waiting, ...) on the API port's /metrics")
	fs.Var(&c.HealthInterval, "health_interval", "health role probe interval")
	fs.StringVar(&c.Pooling, "pooling", c.Pooling, "/v1/embeddings pooling: auto (the model's modules.json / 1_Pooling or GGUF pooling_type; none: not served), last, mean or cls (any model)")
	fs.Var(&c.StatsInterval, "stats_interval", "infer logs a stats line (running, waiting, KV usage %, prompt/generation tokens/s, prefix-cache hit rate) this often while there is activity (0 = off)")
	fs.Var(&c.StreamInterval, "stream_interval", "infer wakes the detokenizer for generated tokens at most this often, so that several steps' tokens are streamed in one wake-up of each role (a request's first and last token go at once; past 32 running requests the spacing grows in proportion, e.g. 8x at 256; 0 = after every step)")
	fs.Var(&c.HealthTimeout, "health_timeout", "no progress for this long while busy = unhealthy")
	fs.IntVar(&c.HealthFailures, "health_failures", c.HealthFailures, "failed checks before health asks for a restart")
	fs.Var(&c.HeartbeatInterval, "heartbeat_interval", "role → supervisor heartbeat interval")
	fs.Var(&c.HeartbeatTimeout, "heartbeat_timeout", "a ready role silent this long is killed and restarted (0 = never)")
	fs.Var(&c.StallTimeout, "stall_timeout", "a router/infer/detokenizer loop that has not turned for this long makes /health and /readiness 503 (raise it above the longest forward step of a big model)")
	fs.Var(&c.UnavailableTimeout, "unavailable_timeout", "while router/infer/detokenizer is down: new requests wait this long, then 503 + Retry-After; in-flight ones end with an error after it (raise it above the model load time to keep streams across an infer restart)")

	fs.StringVar(&c.LogLevel, "log_level", c.LogLevel, "trace|debug|info|warn|error")
	fs.StringVar(&c.LogFormat, "log_format", c.LogFormat, "auto|json|console (auto = console on a TTY)")

	fs.Var(&c.ReadyTimeout, "ready_timeout", "how long a role may take to become ready")
	fs.Var(&c.StopTimeout, "stop_timeout", "grace before SIGKILL when stopping a role (apiserver: graceful_timeout)")
	fs.IntVar(&c.RestartBudget, "restart_budget", c.RestartBudget, "failures of one role within restart_window after which the whole server stops (0 = never: a failing role is reported crash-looping and retried every restart_backoff_max while the others keep serving)")
	fs.Var(&c.RestartWindow, "restart_window", "window of the restart budget")
	fs.Var(&c.RestartBackoff, "restart_backoff", "first restart delay (doubles per consecutive failure)")
	fs.Var(&c.RestartBackoffMax, "restart_backoff_max", "longest restart delay")
	fs.IntVar(&c.PipelineNice, "pipeline_nice", c.PipelineNice, "nice value (0..19) the router, detokenizer, metric and health roles lower themselves to, so that infer's step gets the CPU first; they then also run on as many cores (GOMAXPROCS) as infer's --threads leave free, at least one, unless GOMAXPROCS is set (0 = as launched)")
	fs.IntVar(&c.PipelineSliceUS, "pipeline_slice_us", c.PipelineSliceUS, "CPU slice in µs (100..100000, or 0 for the kernel's) of every role but infer under Linux's EEVDF scheduler (kernel 6.12+): a shorter slice than infer's lets a woken role pre-empt infer's worker at once instead of waiting out its slice")
	fs.IntVar(&c.APIServerNice, "apiserver_nice", c.APIServerNice, "nice value (0..19) the apiserver lowers itself to (apart from --pipeline_nice: it picks up new requests, and waiting for a core there adds to every time to first token); its GOMAXPROCS follows --pipeline_nice's rule")
	fs.BoolVar(&c.PinCPUs, "pin_cpus", c.PinCPUs, "pin infer to the first --threads of the CPUs the instance may use and the other roles to the rest (needs --threads below that CPU count; Linux); for a host that runs one instance")
	return f
}

// CheckOnly reports whether --check-config was given.
func (f *Flags) CheckOnly() bool { return f.checkConfig }

// Config returns the configuration: defaults, overlaid by --config FILE when
// given, overlaid by the flags set explicitly on the command line; then the
// instance name and directories are filled in. It is not resolved or
// validated (see Resolve, LoadShared, Validate).
func (f *Flags) Config() (*Config, error) {
	cfg := f.cfg
	if f.configFile != "" {
		// Remember the explicit flags before the file overwrites the
		// values they are bound to, then re-apply them on top.
		explicit := map[string]string{}
		f.fs.Visit(func(fl *pflag.Flag) { explicit[fl.Name] = fl.Value.String() })
		fromFile, err := Load(f.configFile)
		if err != nil {
			return nil, err
		}
		f.cfg = *fromFile
		var setErr error
		f.fs.Visit(func(fl *pflag.Flag) {
			v, ok := explicit[fl.Name]
			if !ok || fl.Name == "config" || fl.Name == "check_config" || setErr != nil {
				return
			}
			if err := fl.Value.Set(v); err != nil {
				setErr = fmt.Errorf("re-apply --%s=%s over %s: %w", fl.Name, v, f.configFile, err)
			}
		})
		if setErr != nil {
			return nil, setErr
		}
		cfg = f.cfg
	}
	cfg.EosID = append([]int(nil), cfg.EosID...)
	if err := cfg.FillNames(); err != nil {
		return nil, err
	}
	return &cfg, nil
}
