package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/bench"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// benchCounters are the server's own /metrics counters that a benchmark's
// report must agree with (issue 8).
var benchCounters = []string{
	"lightllm_request_success_total",
	"lightllm_request_failure_total",
	"lightllm_prompt_tokens_total",
	"lightllm_generation_tokens_total",
}

// benchScrape reads the counters from the API port's /metrics; a counter
// absent from the exposition is absent from the map.
func benchScrape(ctx context.Context, base string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s: %v", resp.Status, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		for _, name := range benchCounters {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
			if len(f) == 0 {
				continue
			}
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[name] += v
			}
		}
	}
	return out, nil
}

// benchCaughtUp scrapes the counters until each named in want has risen
// from before by at least its value, 30 s at most: the metric role counts
// from events it receives asynchronously, late under load. It returns the
// last scrape, caught up or not.
func benchCaughtUp(ctx context.Context, base string, before, want map[string]float64) (map[string]float64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		after, err := benchScrape(ctx, base)
		if err != nil {
			return nil, err
		}
		caught := true
		for name, w := range want {
			caught = caught && after[name]-before[name] >= w
		}
		if caught || time.Now().After(deadline) {
			return after, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBenchAgreesWithServerMetrics runs short `lightllm bench` runs (the
// package, as the CLI does) against the real server on stories260K, over
// the OpenAI and the native API, and checks that the report's completed
// requests and token totals equal what the server's own /metrics counted
// over the same interval.
func TestBenchAgreesWithServerMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	hf := filepath.Join(models, "stories260K", "hf")
	tok, err := tokenizer.Load(hf)
	if err != nil {
		t.Fatalf("tokenizer: %v", err)
	}
	s := launch(t, buildBinaries(t), hf)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	before, err := benchScrape(ctx, s.base)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range benchCounters {
		if _, ok := before[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	var completed, failed, input, output int
	// Each run is done twice with the same seed: the repeat sends the same
	// prompts, which the radix cache serves but for their last tokens, and
	// must warn that it measured the cache. The OpenAI run learns the hits
	// from usage.prompt_tokens_details, the native one (whose stream
	// events carry no cache count) from /metrics' lightllm_cache_length_sum.
	for i, run := range []struct {
		api        bench.API
		n          int
		rate       float64
		concurrent int
		seed       uint64
		repeat     bool
		source     string
	}{
		{bench.APICompletions, 24, math.Inf(1), 8, 1, false, "usage"},
		{bench.APILightLLM, 8, 40, 0, 2, false, "/metrics lightllm_cache_length_sum"},
		{bench.APICompletions, 24, math.Inf(1), 8, 1, true, "usage"},
		{bench.APILightLLM, 8, 40, 0, 2, true, "/metrics lightllm_cache_length_sum"},
	} {
		// The previous run's counts must have reached the metric role
		// before this one starts: the bench reads its cache counters
		// around the run, and a late tail would be taken for this run's.
		if _, err := benchCaughtUp(ctx, s.base, before, map[string]float64{
			"lightllm_request_success_total": float64(completed),
			"lightllm_prompt_tokens_total":   float64(input),
		}); err != nil {
			t.Fatal(err)
		}
		samples, err := bench.RandomSamples(tok, run.n, 16, 12, 0.5, run.seed)
		if err != nil {
			t.Fatal(err)
		}
		cfg := bench.Config{URL: s.base, API: run.api, RequestRate: run.rate, Burstiness: 1, MaxConcurrency: run.concurrent,
			IgnoreEOS: true, Seed: run.seed, Tokenizer: tok, RequestTimeout: time.Minute}
		rep, err := bench.Run(ctx, cfg, samples)
		if err != nil {
			t.Fatal(err)
		}
		m := rep.Metrics
		t.Logf("run %d %s: completed %d failed %d, input %d output %d tokens, mean TTFT %.1f ms, mean ITL %.1f ms, cache %+v",
			i, run.api, m.Completed, m.Failed, m.TotalInput, m.TotalOutput, m.TTFT.Mean, m.ITL.Mean, rep.CacheUse)
		if m.Completed != run.n || m.Failed != 0 {
			t.Fatalf("%s: completed %d of %d, failed %d (%s)", run.api, m.Completed, run.n, m.Failed, m.FirstError)
		}
		if u := rep.CacheUse; u == nil || u.Source != run.source {
			t.Errorf("run %d: cache use %+v, want it from %s", i, u, run.source)
		}
		warned := len(rep.Warnings) == 1 && strings.Contains(rep.Warnings[0], "measured the cache")
		if warned != run.repeat {
			t.Errorf("run %d (repeat %v): warnings %q", i, run.repeat, rep.Warnings)
		}
		// A repeated prompt recomputes its last token or two (the rounding
		// class of a short tail, see TestPromptCacheEndToEnd); both sources
		// must count the rest, over exactly the run's prompt tokens.
		if u := rep.CacheUse; run.repeat && u != nil && (u.Prompt != float64(m.TotalInput) ||
			u.Cached < float64(m.TotalInput-2*run.n) || u.Cached > float64(m.TotalInput-run.n)) {
			t.Errorf("run %d: %v of %v prompt tokens cached, want %d..%d of %d", i, u.Cached, u.Prompt,
				m.TotalInput-2*run.n, m.TotalInput-run.n, m.TotalInput)
		}
		if !m.ServerPromptCounts {
			t.Errorf("%s: the server reported no prompt token counts", run.api)
		}
		// --ignore-eos: every request generates exactly what it asked for.
		want := 0
		for _, sm := range samples {
			want += sm.OutputLen
		}
		if m.TotalOutput != want {
			t.Errorf("%s: %d output tokens, asked for %d with ignore_eos", run.api, m.TotalOutput, want)
		}
		completed, failed, input, output = completed+m.Completed, failed+m.Failed, input+m.TotalInput, output+m.TotalOutput
	}

	want := map[string]float64{
		"lightllm_request_success_total":   float64(completed),
		"lightllm_request_failure_total":   float64(failed),
		"lightllm_prompt_tokens_total":     float64(input),
		"lightllm_generation_tokens_total": float64(output),
	}
	after, err := benchCaughtUp(ctx, s.base, before, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range benchCounters {
		got, ok := after[name]
		switch {
		case !ok:
			t.Errorf("/metrics has no %s after the runs", name)
		case got-before[name] != want[name]:
			t.Errorf("%s rose by %v over the runs; the bench reports %v", name, got-before[name], want[name])
		}
	}
}

// TestBenchRefusesPastMaxModelLen: `lightllm bench` asks /v1/models for
// max_model_len and refuses, with one line naming the numbers and a
// non-zero exit, a run whose prompts and outputs do not fit, before it
// sends a request.
func TestBenchRefusesPastMaxModelLen(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	hf := filepath.Join(modelsDir(t), "stories260K", "hf")
	bin := buildBinaries(t)
	s := launch(t, bin, hf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var models struct {
		Data []struct {
			MaxModelLen int `json:"max_model_len"`
		} `json:"data"`
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/v1/models", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Data) == 0 || models.Data[0].MaxModelLen <= 0 {
		t.Fatalf("/v1/models: %+v (%v)", models, err)
	}
	limit := models.Data[0].MaxModelLen
	before, err := benchScrape(ctx, s.base)
	if err != nil {
		t.Fatal(err)
	}
	// A random prompt of --input-len tokens may re-encode a little shorter.
	in, out := limit+64, 8
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "lightllm"), "bench", "--url", s.base, "--tokenizer", hf,
		"--num-prompts", "2", "--input-len", strconv.Itoa(in), "--output-len", strconv.Itoa(out))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	msg := strings.TrimSpace(stderr.String())
	re := regexp.MustCompile(fmt.Sprintf(`needs (\d+) input \+ %d output = (\d+) tokens, more than the server's max_model_len %d`, out, limit))
	sub := re.FindStringSubmatch(msg)
	if err == nil || sub == nil || strings.Count(msg, "\n") != 0 || len(stdout) != 0 {
		t.Fatalf("lightllm bench past max_model_len: err %v\nstdout %q\nstderr %q\nwant one line matching %s", err, stdout, msg, re)
	}
	if got, _ := strconv.Atoi(sub[1]); got+out <= limit || got < in/2 {
		t.Errorf("refusal names %s input tokens for --input-len %d, limit %d", sub[1], in, limit)
	}
	after, err := benchScrape(ctx, s.base)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range benchCounters {
		if after[name] != before[name] {
			t.Errorf("%s moved from %v to %v: the refused run sent requests", name, before[name], after[name])
		}
	}
}

// benchCompletion is one non-streaming /v1/completions answer.
type benchCompletion struct {
	Text   string
	Prompt int
	Cached int
}

func benchComplete(ctx context.Context, base, prompt string, maxTokens int, extra map[string]any) (benchCompletion, error) {
	body := map[string]any{"model": "stories", "prompt": prompt, "max_tokens": maxTokens, "temperature": 0}
	for k, v := range extra {
		body[k] = v
	}
	var ans struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails *struct {
				CachedTokens *int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := benchPost(ctx, base+"/v1/completions", body, &ans); err != nil {
		return benchCompletion{}, err
	}
	if len(ans.Choices) != 1 || ans.Usage.PromptTokensDetails == nil || ans.Usage.PromptTokensDetails.CachedTokens == nil {
		return benchCompletion{}, fmt.Errorf("/v1/completions: %d choices, usage %+v: no prompt_tokens_details.cached_tokens",
			len(ans.Choices), ans.Usage)
	}
	return benchCompletion{Text: ans.Choices[0].Text, Prompt: ans.Usage.PromptTokens, Cached: *ans.Usage.PromptTokensDetails.CachedTokens}, nil
}

// benchNative runs /generate with return_details and returns the text and
// the prompt_cache_len of the last token's details (the first token's may
// be published before the infer role records the cache hit).
func benchNative(ctx context.Context, base, prompt string, maxNew int, extra map[string]any) (string, int, error) {
	params := map[string]any{"max_new_tokens": maxNew, "return_details": true}
	for k, v := range extra {
		params[k] = v
	}
	var ans struct {
		GeneratedText []string `json:"generated_text"`
		Tokens        []struct {
			PromptCacheLen *int `json:"prompt_cache_len"`
		} `json:"tokens"`
	}
	if err := benchPost(ctx, base+"/generate", map[string]any{"inputs": prompt, "parameters": params}, &ans); err != nil {
		return "", 0, err
	}
	if len(ans.GeneratedText) != 1 || len(ans.Tokens) == 0 || ans.Tokens[len(ans.Tokens)-1].PromptCacheLen == nil {
		return "", 0, fmt.Errorf("/generate: no text or no prompt_cache_len in the details: %+v", ans)
	}
	return ans.GeneratedText[0], *ans.Tokens[len(ans.Tokens)-1].PromptCacheLen, nil
}

func benchPost(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: %w in %s", url, err, data)
	}
	return nil
}

// TestPromptCacheEndToEnd (issue 11) sends shared-prefix prompts and a
// three-turn conversation (turn k+1 = turn k's prompt + its answer + new
// text) to a server with the radix prompt cache and to one started with
// --disable_dynamic_prompt_cache: greedy outputs must be identical, and the
// cache hits the servers report (OpenAI usage.prompt_tokens_details.
// cached_tokens, native prompt_cache_len) must be what the cache holds.
func TestPromptCacheEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	hf := filepath.Join(models, "stories260K", "hf")
	bin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const system = "Once upon a time, there was a little girl named Lily. She lived in a small house with her mom and dad."
	shared := []string{system + " One day,", system + " She liked to", system + " Her best friend was a dog."}
	turns := []string{"Tom had a red ball.", " Then the sun came out.", " They went home."}

	type outcome struct {
		texts  []string
		cached []int
		prompt []int
	}
	run := func(t *testing.T, s *server) outcome {
		var o outcome
		add := func(c benchCompletion) {
			o.texts, o.cached, o.prompt = append(o.texts, c.Text), append(o.cached, c.Cached), append(o.prompt, c.Prompt)
		}
		for _, p := range shared {
			c, err := benchComplete(ctx, s.base, p, 24, nil)
			if err != nil {
				t.Fatal(err)
			}
			add(c)
		}
		conv := ""
		for _, u := range turns {
			conv += u
			c, err := benchComplete(ctx, s.base, conv, 16, map[string]any{"ignore_eos": true})
			if err != nil {
				t.Fatal(err)
			}
			add(c)
			conv += c.Text
		}
		// The first shared prompt again: everything but its last token is cached.
		c, err := benchComplete(ctx, s.base, shared[0], 24, nil)
		if err != nil {
			t.Fatal(err)
		}
		add(c)
		return o
	}

	var on, off outcome
	t.Run("cache on", func(t *testing.T) {
		s := launch(t, bin, hf)
		on = run(t, s)
		t.Logf("prompt tokens %v, cached %v", on.prompt, on.cached)
		n := len(on.cached)
		for i := 1; i < len(shared); i++ {
			// BOS + the system prompt's tokens are shared; each prompt's own
			// ending is not.
			if on.cached[i] < 20 || on.cached[i] >= on.prompt[i] {
				t.Errorf("shared prompt %d: %d of %d tokens cached, want the common prefix", i, on.cached[i], on.prompt[i])
			}
		}
		// What the cache may give a request is what the request's own
		// cache-less run would have computed (pkg/engine/replay.go): K/V of
		// positions computed in the same rounding class. Every prompt here
		// is shorter than 64 tokens, one chunk of the batch class.
		for k := 1; k < len(turns); k++ {
			// Turn k+1 holds turn k's prompt and answer. The answer was
			// decoded a token per step (the vector kernels), while turn
			// k+1's own run computes those tokens in its prompt chunk (the
			// batch kernels): only turn k's prompt is reused, but for a
			// token where the answer's text re-encodes at the boundary.
			i := len(shared) + k
			prev := on.prompt[i-1]
			if on.cached[i] < prev-2 || on.cached[i] > prev || on.cached[i] >= on.prompt[i] {
				t.Errorf("turn %d: %d of %d prompt tokens cached, want about %d (turn %d's prompt)",
					k+1, on.cached[i], on.prompt[i], prev, k)
			}
		}
		// A repeated prompt recomputes its last two tokens: one token alone
		// would round in another class than in its chunk.
		if on.cached[n-1] != on.prompt[n-1]-2 {
			t.Errorf("repeated prompt: %d of %d tokens cached, want all but the last 2", on.cached[n-1], on.prompt[n-1])
		}
		text, cacheLen, err := benchNative(ctx, s.base, shared[1], 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(on.texts[1], text) || cacheLen != on.prompt[1]-2 {
			t.Errorf("native repeat of shared prompt 1: %q, prompt_cache_len %d; want a prefix of %q and %d",
				text, cacheLen, on.texts[1], on.prompt[1]-2)
		}
		t.Run("one-token request reports its hit", func(t *testing.T) {
			c, err := benchComplete(ctx, s.base, shared[2], 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.Cached != c.Prompt-2 {
				t.Errorf("max_tokens 1 on a cached prompt: cached_tokens %d, want %d", c.Cached, c.Prompt-2)
			}
		})
		t.Run("per-request disable_prompt_cache", func(t *testing.T) {
			text, cacheLen, err := benchNative(ctx, s.base, shared[1], 8, map[string]any{"disable_prompt_cache": true})
			if err != nil {
				t.Fatal(err)
			}
			if cacheLen != 0 || !strings.HasPrefix(on.texts[1], text) {
				t.Errorf("disable_prompt_cache: prompt_cache_len %d (want 0), text %q", cacheLen, text)
			}
		})
	})
	t.Run("cache off", func(t *testing.T) {
		s := launch(t, bin, hf, "--disable_dynamic_prompt_cache")
		off = run(t, s)
		for i, c := range off.cached {
			if c != 0 {
				t.Errorf("request %d: %d cached tokens with --disable_dynamic_prompt_cache", i, c)
			}
		}
		if _, cacheLen, err := benchNative(ctx, s.base, shared[1], 8, nil); err != nil || cacheLen != 0 {
			t.Errorf("native prompt_cache_len %d with the cache off (%v)", cacheLen, err)
		}
	})
	if len(on.texts) != len(off.texts) {
		t.Fatalf("%d answers with the cache on, %d off", len(on.texts), len(off.texts))
	}
	for i := range on.texts {
		if on.texts[i] != off.texts[i] || on.prompt[i] != off.prompt[i] {
			t.Errorf("request %d: cache on %q (%d prompt tokens), off %q (%d)", i, on.texts[i], on.prompt[i], off.texts[i], off.prompt[i])
		}
		if on.texts[i] == "" {
			t.Errorf("request %d: empty answer", i)
		}
	}
}
