package config

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/chatout"
	"github.com/lightllm-go/lightllm/pkg/model/builtin"
)

// LightLLM's fallbacks (api_start.py, config_utils.py).
const (
	fallbackMaxReqTotalLen = 16384
	defaultBatchMaxTokens  = 16384
)

// ResolveOptions are the inputs Resolve cannot compute itself, as function
// fields so tests (and the engine) can supply them. Nil fields use the
// defaults described on each.
type ResolveOptions struct {
	// BytesPerToken is the KV cache size of one token. nil: estimated from
	// the model's geometry with 16-bit elements (the CPU and CUDA engines'
	// f16 KV) or 4-byte ones (the synthetic backend). The engine may supply its exact
	// figure (`lightllm launch` and rolectl.Main must then pass the same).
	BytesPerToken func(cfg *Config, info *ModelInfo) (int64, error)
	// MemAvailable returns the bytes available for the KV cache before
	// mem_fraction. nil: /proc/meminfo MemAvailable, capped by the cgroup v2
	// memory limit when there is one.
	MemAvailable func() (int64, error)
	// FreePort picks a free TCP port on host. nil: bind port 0 and release it.
	FreePort func(host string) (int, error)
	// DefaultModel is consulted when --model_dir is empty. nil: DefaultModel.
	DefaultModel func() (string, error)
	// ResolveModel turns a model spec that is not a local path (a Hugging
	// Face Hub id such as org/name[@rev][:file.gguf]) into a local path,
	// downloading it when needed. nil: model_dir must be a local path.
	ResolveModel func(spec string) (string, error)
}

// Resolve returns a copy of in with every derived default computed, as
// LightLLM's launcher does once at start (api_start._launch_subprocesses):
//   - model_dir: DefaultModel when empty
//   - max_req_total_len: the model's context length (config.json
//     max_sequence_length / max_position_embeddings × RoPE factor, or GGUF
//     <arch>.context_length), fallback 16384
//   - eos_id, data_type: from the model
//   - batch_max_tokens / chunked_prefill_size: 16384 and half of it, or
//     max_req_total_len with --disable_chunked_prefill
//   - max_total_token_num: available memory × mem_fraction ÷ KV bytes per
//     token, capped at running_max_req_size × max_req_total_len (more can
//     never be in use at once)
//   - metric_port: a free port when 0
//
// The result is validated and marked Resolved.
func Resolve(in *Config, opts ResolveOptions) (*Config, error) {
	c := *in
	c.EosID = append([]int(nil), in.EosID...)
	if err := c.FillNames(); err != nil {
		return nil, err
	}
	if err := c.validateStatic(); err != nil {
		return nil, err
	}
	if c.ModelDir == "" {
		dm := opts.DefaultModel
		if dm == nil {
			dm = DefaultModel
		}
		dir, err := dm()
		if err != nil {
			return nil, err
		}
		c.ModelDir = dir
	}
	// A builtin model (builtin:NAME) is built in memory by every role: no
	// download, no path to make absolute.
	isBuiltin := builtin.IsSpec(c.ModelDir)
	if opts.ResolveModel != nil && !isBuiltin && !exists(c.ModelDir) {
		dir, err := opts.ResolveModel(c.ModelDir)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", c.ModelDir, err)
		}
		c.ModelDir = dir
	}
	if abs, err := filepath.Abs(c.ModelDir); err == nil && !isBuiltin {
		c.ModelDir = abs // roles may run in another working directory
	}
	if c.ChatTemplate != "" {
		abs, err := filepath.Abs(c.ChatTemplate)
		if err != nil {
			return nil, fmt.Errorf("chat_template: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("chat_template: %w", err)
		}
		c.ChatTemplate = abs
	}
	if n := c.ToolCallParser; n != "" && !slices.Contains(chatout.ToolParsers(), n) {
		return nil, fmt.Errorf("tool_call_parser: unknown parser %q (have %s)", n, strings.Join(chatout.ToolParsers(), ", "))
	}
	if n := c.ReasoningParser; n != "" && n != "none" && !slices.Contains(chatout.ReasoningParsers(), n) {
		return nil, fmt.Errorf("reasoning_parser: unknown parser %q (have %s, none)", n, strings.Join(chatout.ReasoningParsers(), ", "))
	}
	info, err := ReadModelInfo(c.ModelDir)
	if err != nil {
		return nil, err
	}
	if c.MaxReqTotalLen == 0 {
		c.MaxReqTotalLen = info.ContextLength
		if c.MaxReqTotalLen <= 0 {
			c.MaxReqTotalLen = fallbackMaxReqTotalLen
		}
	}
	if len(c.EosID) == 0 {
		c.EosID = append([]int(nil), info.EOS...)
	}
	if c.DataType == "" {
		c.DataType = info.DType
	}
	c.DataType = NormalizeDataType(c.DataType) // accept torch spellings such as bfloat16
	if c.DisableChunkedPrefill {
		if c.BatchMaxTokens == 0 {
			c.BatchMaxTokens = c.MaxReqTotalLen
		}
		c.ChunkedPrefillSize = c.MaxReqTotalLen
	} else {
		if c.BatchMaxTokens == 0 {
			c.BatchMaxTokens = defaultBatchMaxTokens
		}
		if c.ChunkedPrefillSize == 0 {
			c.ChunkedPrefillSize = c.BatchMaxTokens / 2
		}
	}
	if c.MaxTotalTokenNum == 0 {
		if err := c.sizeKV(info, opts); err != nil {
			return nil, err
		}
	}
	if c.MetricPort == 0 {
		fp := opts.FreePort
		if fp == nil {
			fp = freePort
		}
		p, err := fp(c.Host)
		if err != nil {
			return nil, fmt.Errorf("pick a metric port: %w", err)
		}
		c.MetricPort = p
	}
	c.Resolved = true
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) sizeKV(info *ModelInfo, opts ResolveOptions) error {
	bpt := opts.BytesPerToken
	if bpt == nil {
		bpt = estimateBytesPerToken
	}
	per, err := bpt(c, info)
	if err != nil {
		return fmt.Errorf("size the KV cache: %w", err)
	}
	if per <= 0 {
		return fmt.Errorf("size the KV cache: %d bytes per token", per)
	}
	mem := opts.MemAvailable
	if mem == nil {
		mem = MemAvailable
	}
	avail, err := mem()
	if err != nil {
		return fmt.Errorf("size the KV cache (set --max_total_token_num to skip this): %w", err)
	}
	tokens := int64(float64(avail) * c.MemFraction / float64(per))
	if limit := int64(c.RunningMaxReqSize) * int64(c.MaxReqTotalLen); tokens > limit {
		tokens = limit
	}
	if tokens < int64(c.MaxReqTotalLen) {
		return fmt.Errorf("KV cache too small: %d MiB available × mem_fraction %.2f ÷ %d bytes per token = %d tokens, below max_req_total_len %d; free memory, raise --mem_fraction, or lower --max_req_total_len",
			avail>>20, c.MemFraction, per, tokens, c.MaxReqTotalLen)
	}
	c.MaxTotalTokenNum = int(tokens)
	c.KVBytesPerToken = per
	return nil
}

func estimateBytesPerToken(c *Config, info *ModelInfo) (int64, error) {
	switch {
	case c.Backend == BackendSynthetic:
		return info.KVBytesPerToken(4)
	case c.KVCacheDtype == "q8_0":
		// q8_0 blocks: an f16 scale per 32 int8 values.
		b, err := info.KVBytesPerToken(34)
		return b / 32, err
	}
	return info.KVBytesPerToken(2) // f16 KV: the CPU engine's default (as llama.cpp's) and CUDA's
}

// MemAvailable returns /proc/meminfo's MemAvailable, capped by the free room
// under the cgroup v2 memory limit when the process runs in one (a container
// sees the host's MemAvailable).
func MemAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("read /proc/meminfo: %w", err)
	}
	avail := int64(-1)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse /proc/meminfo MemAvailable %q: %w", f[1], err)
			}
			avail = kb * 1024
		}
	}
	if avail < 0 {
		return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
	}
	if room, ok := cgroupRoom(); ok && room < avail {
		avail = room
	}
	return avail, nil
}

// cgroupRoom is memory.max − memory.current of this process's cgroup v2.
func cgroupRoom() (int64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		rel, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", rel)
		limit, err1 := readCgroupInt(filepath.Join(dir, "memory.max"))
		used, err2 := readCgroupInt(filepath.Join(dir, "memory.current"))
		if err1 != nil || err2 != nil || limit <= 0 {
			return 0, false
		}
		if used > limit {
			return 0, true
		}
		return limit - used, true
	}
	return 0, false
}

func readCgroupInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
