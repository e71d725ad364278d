package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/spf13/pflag"
)

// modelsDir finds the shared test models (../shared/models from the repo root).
func modelsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("LIGHTLLM_TEST_MODELS"); d != "" {
		return d
	}
	d, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	if _, err := os.Stat(filepath.Join(d, "stories260K")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("test models not found at %s (set LIGHTLLM_TEST_MODELS): %v", d, err), nil)
	}
	return d
}

// testOpts makes resolution deterministic: 1 GiB available, port 9100.
func testOpts() ResolveOptions {
	return ResolveOptions{
		MemAvailable: func() (int64, error) { return 1 << 30, nil },
		FreePort:     func(string) (int, error) { return 9100, nil },
	}
}

func parse(t *testing.T, args ...string) (*Flags, *Config) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatalf("config %v: %v", args, err)
	}
	return f, cfg
}

func TestFlagNamesAndDefaults(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs)
	want := map[string]string{ // LightLLM's defaults where they exist
		"model_dir": "", "host": "127.0.0.1", "port": "8000", "max_total_token_num": "0",
		"max_req_total_len": "0", "batch_max_tokens": "0", "chunked_prefill_size": "0",
		"running_max_req_size": "256", "router_token_ratio": "0.85", "router_max_wait_tokens": "1",
		"router_policy": "past_future", "mem_fraction": "0.8", "eos_id": "", "data_type": "", "tp": "1",
		"disable_dynamic_prompt_cache": "false", "graceful_timeout": "1m0s", "max_waiting_reqs": "1024",
		"metric_port": "0", "metric_gateway": "", "health_interval": "10s", "log_level": "info",
		"threads": "0", "backend": "cpu", "synthetic_step_ms": "10", "instance": "",
		"schedule_time_interval": "30ms", "model_name": "default_model_name", "config": "", "check-config": "false",
		"pipeline_nice": "5", "apiserver_nice": "0", "pipeline_slice_us": "100", "pin_cpus": "false",
	}
	for name, def := range want {
		fl := fs.Lookup(name)
		if fl == nil {
			t.Errorf("flag --%s missing", name)
			continue
		}
		if fl.DefValue != def {
			t.Errorf("--%s default %q, want %q", name, fl.DefValue, def)
		}
	}
	// Every JSON key is a flag, so config files and command lines agree.
	b, _ := json.Marshal(DefaultConfig())
	var keys map[string]any
	_ = json.Unmarshal(b, &keys)
	for k := range keys {
		if k == "resolved" || k == "resolved_key" || k == "kv_bytes_per_token" {
			continue
		}
		if fs.Lookup(k) == nil {
			t.Errorf("config key %q has no flag", k)
		}
	}
}

func TestInstanceAndDirs(t *testing.T) {
	base := t.TempDir()
	t.Setenv(EnvRunDir, base)
	t.Setenv(EnvShmDir, filepath.Join(base, "shm"))
	tests := map[string]struct {
		args         []string
		instance     string
		runDir, shm  string
		wantErrMatch string
	}{
		"from port":     {args: []string{"--port", "8123"}, instance: "8123", runDir: filepath.Join(base, "8123"), shm: filepath.Join(base, "shm", "lightllm-8123")},
		"explicit":      {args: []string{"--instance", "blue"}, instance: "blue", runDir: filepath.Join(base, "blue"), shm: filepath.Join(base, "shm", "lightllm-blue")},
		"bad name":      {args: []string{"--instance", "../x"}, wantErrMatch: "invalid instance"},
		"explicit dirs": {args: []string{"--run_dir", "/r/x", "--shm_dir", "/s/lightllm-x"}, instance: "8000", runDir: "/r/x", shm: "/s/lightllm-x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f := RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.Config()
			if tc.wantErrMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrMatch) {
					t.Fatalf("err = %v, want %q", err, tc.wantErrMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Instance != tc.instance || cfg.RunDir != tc.runDir || cfg.ShmDir != tc.shm {
				t.Fatalf("got instance=%q run=%q shm=%q", cfg.Instance, cfg.RunDir, cfg.ShmDir)
			}
			if got := cfg.ControlSocketPath(); got != filepath.Join(tc.runDir, "supervisor.sock") {
				t.Fatalf("control socket %q", got)
			}
			if got := cfg.SupervisorLockPath(); got != filepath.Join(tc.shm, "supervisor.lock") {
				t.Fatalf("supervisor lock %q", got)
			}
		})
	}
}

func TestConfigFileUnderExplicitFlags(t *testing.T) {
	t.Setenv(EnvRunDir, t.TempDir())
	dir := t.TempDir()
	path := filepath.Join(dir, "x.json")
	file := `{"port": 9001, "running_max_req_size": 64, "eos_id": [5, 6], "graceful_timeout": 7, "log_level": "debug"}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	_, cfg := parse(t, "--config", path, "--running_max_req_size", "32", "--schedule_time_interval", "0.05")
	if cfg.Port != 9001 || cfg.Instance != "9001" {
		t.Errorf("port/instance from file: %d %q", cfg.Port, cfg.Instance)
	}
	if cfg.RunningMaxReqSize != 32 {
		t.Errorf("explicit flag must win over the file: running_max_req_size=%d", cfg.RunningMaxReqSize)
	}
	if len(cfg.EosID) != 2 || cfg.EosID[0] != 5 || cfg.EosID[1] != 6 {
		t.Errorf("eos_id from file: %v", cfg.EosID)
	}
	if cfg.GracefulTimeout.D() != 7*time.Second || cfg.ScheduleTimeInterval.D() != 50*time.Millisecond {
		t.Errorf("durations: graceful=%s interval=%s", cfg.GracefulTimeout, cfg.ScheduleTimeInterval)
	}
	if cfg.LogLevel != "debug" || cfg.Host != "127.0.0.1" {
		t.Errorf("file value / default lost: log_level=%q host=%q", cfg.LogLevel, cfg.Host)
	}

	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"max_total_tokens": 5}`), 0o644)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := RegisterFlags(fs)
	_ = fs.Parse([]string{"--config", bad})
	if _, err := f.Config(); err == nil || !strings.Contains(err.Error(), "max_total_tokens") {
		t.Fatalf("unknown key must be reported, got %v", err)
	}
}

func TestDurationAndIntListValues(t *testing.T) {
	tests := map[string]struct {
		in   string
		want time.Duration
		err  bool
	}{
		"seconds":  {"0.03", 30 * time.Millisecond, false},
		"integer":  {"60", time.Minute, false},
		"go":       {"1m30s", 90 * time.Second, false},
		"garbage":  {"soon", 0, true},
		"trailing": {"5 s", 0, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var d Duration
			err := d.Set(tc.in)
			if (err != nil) != tc.err || d.D() != tc.want {
				t.Fatalf("Set(%q) = %v, %v; want %v, err=%v", tc.in, d, err, tc.want, tc.err)
			}
		})
	}
	var ids []int
	l := intList{&ids}
	if err := l.Set("1,2 3"); err != nil || l.String() != "1,2,3" {
		t.Fatalf("intList: %v %q", err, l.String())
	}
	if err := l.Set("1,x"); err == nil {
		t.Fatal("intList accepted x")
	}
}

func TestValidate(t *testing.T) {
	ok := func() Config {
		c := DefaultConfig()
		c.Instance, c.RunDir, c.ShmDir = "t", "/tmp/lightllm-t", "/dev/shm/lightllm-t"
		return c
	}
	resolved := func() Config {
		c := ok()
		c.Resolved, c.ModelDir, c.MaxReqTotalLen, c.MaxTotalTokenNum = true, "/m", 512, 4096
		c.BatchMaxTokens, c.ChunkedPrefillSize, c.MetricPort = 16384, 8192, 9100
		return c
	}
	tests := map[string]struct {
		mut  func(*Config)
		base func() Config
		want string // "" = valid
	}{
		"defaults":           {func(*Config) {}, ok, ""},
		"resolved":           {func(*Config) {}, resolved, ""},
		"port":               {func(c *Config) { c.Port = 0 }, ok, "port must be"},
		"mem_fraction 1":     {func(c *Config) { c.MemFraction = 1 }, ok, "mem_fraction"},
		"policy":             {func(c *Config) { c.RouterPolicy = "fifo" }, ok, "router_policy"},
		"backend":            {func(c *Config) { c.Backend = "tpu" }, ok, "backend"},
		"tp on cpu":          {func(c *Config) { c.TP = 2 }, ok, "needs the cuda backend"},
		"data_type":          {func(c *Config) { c.DataType = "int3" }, ok, "data_type"},
		"log level":          {func(c *Config) { c.LogLevel = "loud" }, ok, "log_level"},
		"shm dir guard":      {func(c *Config) { c.ShmDir = "/dev/shm" }, ok, "lightllm-*"},
		"relative run dir":   {func(c *Config) { c.RunDir = "run" }, ok, "absolute"},
		"long run dir":       {func(c *Config) { c.RunDir = "/" + strings.Repeat("x", 100) }, ok, "too long"},
		"metric = port":      {func(c *Config) { c.MetricPort = c.Port }, ok, "metric_port and port"},
		"heartbeat":          {func(c *Config) { c.HeartbeatTimeout = c.HeartbeatInterval }, ok, "heartbeat_timeout"},
		"zero duration":      {func(c *Config) { c.ReadyTimeout = 0 }, ok, "ready_timeout"},
		"req > kv":           {func(c *Config) { c.MaxReqTotalLen = 8192 }, resolved, "exceeds max_total_token_num"},
		"chunk > batch":      {func(c *Config) { c.ChunkedPrefillSize = 20000 }, resolved, "exceeds batch_max_tokens"},
		"no chunk too small": {func(c *Config) { c.DisableChunkedPrefill, c.BatchMaxTokens = true, 100 }, resolved, "at least max_req_total_len"},
		"pipeline_nice":      {func(c *Config) { c.PipelineNice = 20 }, ok, "pipeline_nice must be in"},
		"apiserver_nice":     {func(c *Config) { c.APIServerNice = -1 }, ok, "apiserver_nice must be in"},
		"slice too short":    {func(c *Config) { c.PipelineSliceUS = 99 }, ok, "pipeline_slice_us must be 0 or in"},
		"slice too long":     {func(c *Config) { c.PipelineSliceUS = 100001 }, ok, "pipeline_slice_us must be 0 or in"},
		"slice negative":     {func(c *Config) { c.PipelineSliceUS = -5 }, ok, "pipeline_slice_us must be 0 or in"},
		"kernel's slice":     {func(c *Config) { c.PipelineSliceUS = 0 }, ok, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := tc.base()
			tc.mut(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	c := DefaultConfig()
	c.Instance, c.EosID, c.GracefulTimeout, c.MetricGateway = "rt", []int{1, 2}, Duration(1500*time.Millisecond), "http://u:p@gw:9091"
	path := filepath.Join(t.TempDir(), "sub", "config.json")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
	if r := c.Redacted(); strings.Contains(r.MetricGateway, "u:p") {
		t.Fatalf("secret not redacted: %s", r.MetricGateway)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("missing file loaded")
	}
}

func TestNoModelHint(t *testing.T) {
	t.Setenv(EnvRunDir, t.TempDir())
	_, cfg := parse(t)
	_, err := Resolve(cfg, testOpts())
	if !errors.Is(err, ErrNoModel) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want the one-line ErrNoModel hint, got %v", err)
	}
}

func TestFlagStyleAndSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string // "" = parses
	}{
		{[]string{"--max-total-token-num", "100"}, ""},
		{[]string{"--max_total_token_num", "100"}, ""},
		{[]string{"--check-config"}, ""},
		{[]string{"--max-total-tokens", "100"}, "did you mean --max_total_token_num?)"},
		{[]string{"--modle_dir", "x"}, "did you mean --model_dir?)"},
		{[]string{"--zzzzzzzz"}, "unknown flag: --zzzzzzzz"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		RegisterFlags(fs)
		err := SuggestFlag(fs, fs.Parse(tc.args))
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.wantErr)):
			t.Errorf("%v: error %v, want ...%s", tc.args, err, tc.wantErr)
		case tc.wantErr == "unknown flag: --zzzzzzzz" && strings.Contains(err.Error(), "did you mean"):
			t.Errorf("%v: a far-off suggestion: %v", tc.args, err)
		}
	}
}

func TestStreamSpacing(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		interval time.Duration
		n        int
		want     time.Duration
	}{
		{10 * ms, 0, 10 * ms},
		{10 * ms, 1, 10 * ms},
		{10 * ms, PacedStreams, 10 * ms},
		{10 * ms, 2 * PacedStreams, 20 * ms},
		{10 * ms, 256, 80 * ms},
		{10 * ms, 48, 15 * ms},
		{0, 256, 0}, // a hand-over per step stays a hand-over per step
	} {
		if got := StreamSpacing(tc.interval, tc.n); got != tc.want {
			t.Errorf("StreamSpacing(%v, %d) = %v, want %v", tc.interval, tc.n, got, tc.want)
		}
	}
}
