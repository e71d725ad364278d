package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Validate checks every field; on a resolved config it also checks the
// relations between derived values. All problems are reported together.
func (c *Config) Validate() error {
	if err := c.validateStatic(); err != nil {
		return err
	}
	if !c.Resolved {
		return nil
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.ModelDir == "" {
		add("model_dir is empty")
	}
	if c.MaxReqTotalLen <= 0 {
		add("max_req_total_len must be > 0, got %d", c.MaxReqTotalLen)
	}
	if c.MaxTotalTokenNum <= 0 {
		add("max_total_token_num must be > 0, got %d", c.MaxTotalTokenNum)
	} else if c.MaxReqTotalLen > c.MaxTotalTokenNum {
		add("max_req_total_len %d exceeds max_total_token_num %d: one request could never fit in the KV cache", c.MaxReqTotalLen, c.MaxTotalTokenNum)
	}
	if c.BatchMaxTokens <= 0 || c.ChunkedPrefillSize <= 0 {
		add("batch_max_tokens (%d) and chunked_prefill_size (%d) must be > 0", c.BatchMaxTokens, c.ChunkedPrefillSize)
	} else if c.ChunkedPrefillSize > c.BatchMaxTokens && !c.DisableChunkedPrefill {
		add("chunked_prefill_size %d exceeds batch_max_tokens %d", c.ChunkedPrefillSize, c.BatchMaxTokens)
	}
	if c.DisableChunkedPrefill && c.BatchMaxTokens < c.MaxReqTotalLen {
		add("without chunked prefill batch_max_tokens (%d) must be at least max_req_total_len (%d)", c.BatchMaxTokens, c.MaxReqTotalLen)
	}
	if c.MetricPort <= 0 {
		add("metric_port must be set after resolution, got %d", c.MetricPort)
	}
	return errors.Join(errs...)
}

// validateStatic checks what does not depend on resolution.
func (c *Config) validateStatic() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Instance != "" {
		if err := ValidInstance(c.Instance); err != nil {
			errs = append(errs, err)
		}
	}
	if c.RunMode != "normal" {
		add("run_mode %q is not supported (only normal)", c.RunMode)
	}
	if c.Port < 1 || c.Port > 65535 {
		add("port must be in 1..65535, got %d", c.Port)
	}
	if c.MetricPort < 0 || c.MetricPort > 65535 {
		add("metric_port must be in 0..65535, got %d", c.MetricPort)
	} else if c.MetricPort == c.Port {
		add("metric_port and port are both %d", c.Port)
	}
	if strings.TrimSpace(c.Host) == "" {
		add("host is empty")
	}
	switch c.Backend {
	case BackendCPU, BackendCUDA, BackendSynthetic:
	default:
		add("backend %q unknown (cpu|cuda|synthetic)", c.Backend)
	}
	switch c.KVCacheDtype {
	case "", "f16":
	case "q8_0":
		if c.Backend == BackendCUDA {
			add("kv_cache_dtype q8_0 is CPU-only (the cuda backend keeps an f16 cache)")
		}
	default:
		add("kv_cache_dtype %q unknown (f16|q8_0)", c.KVCacheDtype)
	}
	if c.SyntheticStepMs < 0 {
		add("synthetic_step_ms must be >= 0, got %g", c.SyntheticStepMs)
	}
	if c.TP < 1 {
		add("tp must be >= 1, got %d", c.TP)
	} else if c.TP > 1 && c.Backend != BackendCUDA {
		add("tp %d needs the cuda backend", c.TP)
	}
	if c.Threads < 0 {
		add("threads must be >= 0, got %d", c.Threads)
	}
	if c.DataType != "" && NormalizeDataType(c.DataType) == "" {
		add("data_type %q unknown (fp16|bf16|fp32)", c.DataType)
	}
	for _, id := range c.EosID {
		if id < 0 {
			add("eos_id %d is negative", id)
		}
	}
	for _, kv := range []struct {
		name string
		v    int
	}{
		{"max_total_token_num", c.MaxTotalTokenNum}, {"max_req_total_len", c.MaxReqTotalLen},
		{"batch_max_tokens", c.BatchMaxTokens}, {"chunked_prefill_size", c.ChunkedPrefillSize},
		{"router_max_wait_tokens", c.RouterMaxWaitTokens},
	} {
		if kv.v < 0 {
			add("%s must be >= 0, got %d", kv.name, kv.v)
		}
	}
	if c.RunningMaxReqSize < 1 {
		add("running_max_req_size must be >= 1, got %d", c.RunningMaxReqSize)
	}
	if c.MaxWaitingReqs < 1 {
		add("max_waiting_reqs must be >= 1, got %d", c.MaxWaitingReqs)
	}
	if c.RouterTokenRatio < 0 || c.RouterTokenRatio > 1 {
		add("router_token_ratio must be in [0,1], got %g", c.RouterTokenRatio)
	}
	if !slices.Contains(routerPolicies, c.RouterPolicy) {
		add("router_policy %q unknown (%s)", c.RouterPolicy, strings.Join(routerPolicies, "|"))
	}
	if !(c.MemFraction > 0 && c.MemFraction < 1) {
		add("mem_fraction must be in (0,1), got %g", c.MemFraction)
	}
	if c.HealthFailures < 1 {
		add("health_failures must be >= 1, got %d", c.HealthFailures)
	}
	if c.PipelineNice < 0 || c.PipelineNice > 19 {
		add("pipeline_nice must be in [0, 19], got %d", c.PipelineNice)
	}
	if c.APIServerNice < 0 || c.APIServerNice > 19 {
		add("apiserver_nice must be in [0, 19], got %d", c.APIServerNice)
	}
	// The kernel clamps a custom slice to [0.1 ms, 100 ms]; refuse what it
	// would silently change.
	if c.PipelineSliceUS != 0 && (c.PipelineSliceUS < 100 || c.PipelineSliceUS > 100000) {
		add("pipeline_slice_us must be 0 or in [100, 100000], got %d", c.PipelineSliceUS)
	}
	if c.PinCPUs && (c.Threads <= 0 || c.Threads >= runtime.NumCPU()) {
		add("pin_cpus needs --threads between 1 and one less than the %d CPUs this process may use (infer keeps that many, the other roles get the rest), got %d", runtime.NumCPU(), c.Threads)
	}
	if c.RestartBudget < 0 {
		add("restart_budget must be >= 0, got %d", c.RestartBudget)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"schedule_time_interval", c.ScheduleTimeInterval}, {"push_interval", c.PushInterval},
		{"health_interval", c.HealthInterval}, {"health_timeout", c.HealthTimeout},
		{"heartbeat_interval", c.HeartbeatInterval}, {"ready_timeout", c.ReadyTimeout},
		{"stop_timeout", c.StopTimeout}, {"restart_window", c.RestartWindow},
		{"restart_backoff", c.RestartBackoff}, {"restart_backoff_max", c.RestartBackoffMax},
		{"stall_timeout", c.StallTimeout}, {"unavailable_timeout", c.UnavailableTimeout},
	} {
		if d.v <= 0 {
			add("%s must be > 0, got %s", d.name, d.v)
		}
	}
	switch c.Pooling {
	case PoolingAuto, PoolingLast, PoolingMean, PoolingCLS, "":
	default:
		add("pooling %q: want auto, last, mean or cls", c.Pooling)
	}
	if c.StatsInterval < 0 {
		add("stats_interval must be >= 0 (0 = off), got %s", c.StatsInterval)
	}
	if c.StreamInterval < 0 || c.StreamInterval > Duration(time.Second) {
		add("stream_interval must be in [0, 1s] (0 = every step), got %s", c.StreamInterval)
	}
	if c.GracefulTimeout < 0 || c.HeartbeatTimeout < 0 {
		add("graceful_timeout (%s) and heartbeat_timeout (%s) must be >= 0", c.GracefulTimeout, c.HeartbeatTimeout)
	}
	if c.HeartbeatTimeout > 0 && c.HeartbeatTimeout < 2*c.HeartbeatInterval {
		add("heartbeat_timeout %s must be at least twice heartbeat_interval %s", c.HeartbeatTimeout, c.HeartbeatInterval)
	}
	if c.RestartBackoffMax < c.RestartBackoff {
		add("restart_backoff_max %s is below restart_backoff %s", c.RestartBackoffMax, c.RestartBackoff)
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		add("log_level %q unknown (trace|debug|info|warn|error)", c.LogLevel)
	}
	switch c.LogFormat {
	case "auto", "json", "console":
	default:
		add("log_format %q unknown (auto|json|console)", c.LogFormat)
	}
	for i, n := range c.ServedModelName {
		if slices.Contains(c.ServedModelName[:i], n) {
			add("served_model_name %q is listed twice", n)
		}
	}
	if c.MetricsNeedAPIKey && len(c.APIKey) == 0 {
		add("metrics_need_api_key needs api_key")
	}
	for _, o := range c.AllowedOrigins {
		if o != "*" && !strings.Contains(o, "://") {
			add("allowed_origins %q is not an origin (scheme://host[:port], or *)", o)
		}
	}
	if c.RunDir != "" {
		if !filepath.IsAbs(c.RunDir) {
			add("run_dir %q must be an absolute path", c.RunDir)
		} else if len(c.RunDir)+1+sockNameRoom > maxUnixPath {
			add("run_dir %q is too long for unix socket paths (keep it under %d characters)", c.RunDir, maxUnixPath-1-sockNameRoom)
		}
	}
	if c.ShmDir != "" {
		if !filepath.IsAbs(c.ShmDir) {
			add("shm_dir %q must be an absolute path", c.ShmDir)
		} else if !strings.HasPrefix(filepath.Base(c.ShmDir), shmDirPrefix) {
			// The supervisor removes the whole shm dir on stop; the prefix
			// keeps a typo such as --shm_dir /dev/shm from wiping it.
			add("shm_dir %q must be a directory named lightllm-*", c.ShmDir)
		}
	}
	return errors.Join(errs...)
}
