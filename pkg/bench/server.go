package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// modelInfo is what GET /v1/models says about the first model served.
type modelInfo struct {
	ID string
	// MaxModelLen is the server's limit on prompt + output tokens (vLLM's
	// and LightLLM's max_model_len); 0 when the server does not say.
	MaxModelLen int
}

// fetchModel asks an OpenAI-compatible server for its first model (GET
// /v1/models): vLLM and SGLang reject requests naming another model, and
// max_model_len lets a run too long for the server be refused before it
// sends anything.
func fetchModel(ctx context.Context, client *http.Client, url string) (modelInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/models", nil)
	if err != nil {
		return modelInfo{}, fmt.Errorf("detect model: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return modelInfo{}, fmt.Errorf("detect model: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return modelInfo{}, fmt.Errorf("detect model: GET /v1/models: HTTP %d", resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return modelInfo{}, fmt.Errorf("detect model: %w", err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return modelInfo{}, errors.New("detect model: /v1/models lists no model")
	}
	return modelInfo{ID: list.Data[0].ID, MaxModelLen: max(list.Data[0].MaxModelLen, 0)}, nil
}

// demand is the longest request a run will send, as the local token
// counts say: what is checked against the server's max_model_len.
type demand struct {
	what          string // "sample 12", "conversation 3 (turn 4)"
	input, output int
}

// fits refuses a run whose longest request exceeds maxLen (0: unknown).
func (d demand) fits(maxLen int) error {
	if maxLen <= 0 || d.input+d.output <= maxLen {
		return nil
	}
	return fmt.Errorf("bench: %s needs %d input + %d output = %d tokens, more than the server's max_model_len %d "+
		"(GET /v1/models); lower --input-len/--output-len", d.what, d.input, d.output, d.input+d.output, maxLen)
}

// cacheCounter is a pair of cumulative server counters: prompt tokens
// served from the prefix cache, and prompt tokens in all.
type cacheCounter struct{ cached, prompt string }

// cacheCounters are the names LightLLM (this server), vLLM and SGLang
// export on /metrics.
var cacheCounters = []cacheCounter{
	{"lightllm_cache_length_sum", "lightllm_prompt_tokens_total"},
	{"vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total"},
	{"sglang:cached_tokens_total", "sglang:prompt_tokens_total"},
}

// cacheSnapshot is one scrape of the first cacheCounter the server has.
type cacheSnapshot struct {
	counter        cacheCounter
	cached, prompt float64
}

// scrapeCache reads the server's prefix-cache counters from GET /metrics
// (summed over label sets); ok is false when the server exports none of
// them or /metrics is not reachable.
func scrapeCache(ctx context.Context, client *http.Client, url string) (cacheSnapshot, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return cacheSnapshot{}, false
	}
	resp, err := client.Do(req)
	if err != nil {
		return cacheSnapshot{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return cacheSnapshot{}, false
	}
	vals := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if name, v, ok := sampleLine(sc.Text()); ok {
			vals[name] += v
		}
	}
	for _, c := range cacheCounters {
		if cached, ok := vals[c.cached]; ok {
			return cacheSnapshot{counter: c, cached: cached, prompt: vals[c.prompt]}, true
		}
	}
	return cacheSnapshot{}, false
}

// sampleLine parses one sample of the Prometheus text format, "name{labels}
// value [timestamp]", for the names cacheCounters lists.
func sampleLine(line string) (string, float64, bool) {
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return "", 0, false
	}
	name, rest := line[:end], line[end:]
	if rest[0] == '{' {
		close := strings.LastIndexByte(rest, '}')
		if close < 0 {
			return "", 0, false
		}
		rest = rest[close+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return name, v, err == nil
}

// CacheUse is how much of the run's prompts the server served from its
// prefix cache, by the server's own count.
type CacheUse struct {
	Source string  `json:"source"` // "usage" (per-request counts) or the /metrics counter's name
	Cached float64 `json:"cached_tokens"`
	Prompt float64 `json:"prompt_tokens"`
}

// cacheWarnShare is the share of prompt tokens served from the cache over
// which a run is said to measure the cache rather than prefill.
const cacheWarnShare = 0.5

// cacheWarning says when a run (not a multiturn one, which reuses prefixes
// on purpose) was mostly served from the prompt cache: a repeat with the
// same --seed sends the same prompts, which the server then barely
// prefills, so TTFT and throughput are not the cold numbers.
func cacheWarning(u *CacheUse, seed uint64) string {
	if u == nil || u.Prompt <= 0 || u.Cached <= cacheWarnShare*u.Prompt {
		return ""
	}
	return fmt.Sprintf("warning: the server served %.0f of %.0f prompt tokens (%.0f%%, %s) from its prompt cache: "+
		"this run measured the cache, not prefill (a repeated run with the same --seed %d sends the same prompts); "+
		"use another --seed, or restart the server or disable its prompt cache",
		u.Cached, u.Prompt, 100*u.Cached/u.Prompt, u.Source, seed)
}
