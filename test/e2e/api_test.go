package e2e

import (
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestAPI (issue 5) builds the binaries once and launches the real server
// twice. First on stories260K as shipped, driving every endpoint: greedy
// text through the native and OpenAI APIs, streamed and not, in every
// prompt shape, against llama.cpp's golden run; per-token logprobs and top
// alternatives; n > 1 with a seed; the info endpoints; more than a hundred
// hostile requests; and the official OpenAI client. Then on a modified copy
// of its directory, for the chat endpoint and UTF-8 streaming
// (api_chat_test.go).
func TestAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	gold := loadAPIGolden(t, models)
	bin := buildBinaries(t)
	t.Run("stories260K", func(t *testing.T) { testPlainModel(t, bin, models, gold) })
	t.Run("chat and utf8", func(t *testing.T) { testChatAndUTF8(t, bin, models, gold) })
}

func testPlainModel(t *testing.T, bin, models string, gold apiGolden) {
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"))
	c := newAPIClient(t, s.base)
	stopped := gold.Tokens[:gold.StopIndex+1] // ids up to and including the story-ending id 1

	t.Run("native", func(t *testing.T) { testNative(t, c, gold, stopped) })
	t.Run("native logprobs", func(t *testing.T) { testNativeLogprobs(t, c) })
	t.Run("native logit_bias", func(t *testing.T) { testNativeLogitBias(t, c, gold) })
	t.Run("native allowed_token_ids", func(t *testing.T) { testNativeAllowedTokens(t, c, gold) })
	t.Run("native length decay", func(t *testing.T) { testNativeLengthDecay(t, c) })
	t.Run("min_p", func(t *testing.T) { testMinP(t, c, nil) })
	t.Run("completions", func(t *testing.T) { testCompletions(t, c, gold) })
	t.Run("completions logprobs", func(t *testing.T) { testCompletionLogprobs(t, c, gold) })
	t.Run("seeded n", func(t *testing.T) { testSeededN(t, c) })
	t.Run("chat without template", func(t *testing.T) {
		a := c.do(t, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
		if err := (apiHostile{Status: 400, Code: "no_chat_template", Param: "messages"}).Check(a.status, a.body); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("info", func(t *testing.T) { testInfo(t, c) })
	t.Run("hostile", func(t *testing.T) { testHostile(t, c, s, gold) })
	t.Run("openai client", func(t *testing.T) { runOpenAIClientCheck(t, s.base) })
}

// apiNativeParams stop where llama.cpp's golden text stops: the model ends its
// story with id 1, and special tokens are left out of the text.
func apiNativeParams(extra map[string]any) map[string]any {
	p := map[string]any{"max_new_tokens": 511, "stop_sequences": [][]int{{1}}, "skip_special_tokens": true}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// apiNativeAnswer is /generate's answer for n = 1.
type apiNativeAnswer struct {
	GeneratedText []string `json:"generated_text"`
	Count         int      `json:"count_output_tokens"`
	FinishReason  string   `json:"finish_reason"`
	PromptTokens  int      `json:"prompt_tokens"`
	Tokens        []struct {
		ID        int32    `json:"id"`
		Logprob   *float64 `json:"logprob"`
		Cumlog    float64  `json:"cumlogprob"`
		Text      string   `json:"text"`
		PromptLen int      `json:"prompt_tokens"`
	} `json:"tokens"`
	Logprobs []map[string]apiNativeAlt `json:"logprobs"`
}

type apiNativeAlt struct {
	Logprob float64 `json:"logprob"`
	Rank    *int    `json:"rank"`
	Decoded string  `json:"decoded_token"`
}

// apiNativeEvent is one /generate_stream event.
type apiNativeEvent struct {
	Token struct {
		ID       *int32                  `json:"id"`
		Text     string                  `json:"text"`
		Logprob  *float64                `json:"logprob"`
		Special  bool                    `json:"special"`
		Count    int                     `json:"count_output_tokens"`
		Logprobs map[string]apiNativeAlt `json:"logprobs"`
	} `json:"token"`
	GeneratedText *string `json:"generated_text"`
	Finished      bool    `json:"finished"`
	FinishReason  *string `json:"finish_reason"`
}

// apiNativeStream runs /generate_stream (or / with stream true) and checks
// LightLLM's framing: "data:" with no space, one event per token, the
// last one finished, no [DONE].
func apiNativeStream(t *testing.T, c *apiClient, path string, body map[string]any) []apiNativeEvent {
	t.Helper()
	raw, _ := c.sse(t, path, body)
	evs := make([]apiNativeEvent, len(raw))
	for i, r := range raw {
		if strings.HasPrefix(r, " ") || r == "[DONE]" {
			t.Fatalf("native event %d framed OpenAI-style: %q", i, r)
		}
		apiJSON(t, r, &evs[i])
		if evs[i].Finished != (i == len(raw)-1) {
			t.Fatalf("event %d of %d: finished=%v", i, len(raw), evs[i].Finished)
		}
	}
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	return evs
}

func testNative(t *testing.T, c *apiClient, gold apiGolden, stopped []int32) {
	// BOS alone, and BOS + "Once upon a time" (as text and as ids).
	rest := strings.TrimPrefix(gold.Text, "Once upon a time")
	cases := []struct {
		name   string
		inputs any
		want   string
		skip   int // golden tokens the prompt already holds
	}{
		{"bos only", "", gold.Text, 0},
		{"text prompt", "Once upon a time", rest, 4},
		{"id prompt", append([]int32{1}, gold.Once...), rest, 4},
	}
	for _, tc := range cases {
		want, wantIDs := tc.want, stopped[tc.skip:]
		var a apiNativeAnswer
		c.postJSON(t, "/generate", map[string]any{"inputs": tc.inputs, "parameters": apiNativeParams(map[string]any{"return_details": true})}, &a)
		if len(a.GeneratedText) != 1 || a.GeneratedText[0] != want || a.FinishReason != "stop" || a.Count != len(wantIDs) {
			t.Errorf("/generate %s: %d tokens (%s) %q\nwant %d tokens (stop) %q", tc.name, a.Count, a.FinishReason, a.GeneratedText, len(wantIDs), want)
		}
		ids := make([]int32, len(a.Tokens))
		cum := 0.0
		for i, tok := range a.Tokens {
			ids[i] = tok.ID
			if tok.Logprob == nil || *tok.Logprob > 0 || math.IsNaN(*tok.Logprob) {
				t.Fatalf("/generate %s token %d: logprob %v", tc.name, i, tok.Logprob)
			}
			cum += *tok.Logprob
			if math.Abs(tok.Cumlog-cum/float64(i+1)) > 1e-4 {
				t.Errorf("token %d: cumlogprob %v, want the mean %v", i, tok.Cumlog, cum/float64(i+1))
			}
		}
		if !slices.Equal(ids, wantIDs) {
			t.Errorf("/generate %s: ids differ from llama.cpp's:\n got %v\nwant %v", tc.name, ids, wantIDs)
		}
		if len(a.Logprobs) != len(ids) {
			t.Errorf("/generate %s: %d logprobs entries for %d tokens", tc.name, len(a.Logprobs), len(ids))
		}

		for _, path := range []string{"/generate_stream", "/"} {
			body := map[string]any{"inputs": tc.inputs, "parameters": apiNativeParams(nil)}
			if path == "/" {
				body["stream"] = true
			}
			evs := apiNativeStream(t, c, path, body)
			var text strings.Builder
			var got []int32
			for i, ev := range evs {
				if ev.Token.ID == nil || ev.Token.Count != i+1 || ev.GeneratedText != nil {
					t.Fatalf("%s %s event %d: %+v", path, tc.name, i, ev)
				}
				if ev.Token.Logprob == nil || *ev.Token.Logprob > 0 {
					t.Fatalf("%s %s event %d: logprob %v", path, tc.name, i, ev.Token.Logprob)
				}
				lp, ok := ev.Token.Logprobs[fmt.Sprint(*ev.Token.ID)]
				if !ok || lp.Logprob != *ev.Token.Logprob {
					t.Fatalf("%s %s event %d: logprobs %v do not hold the token's %v", path, tc.name, i, ev.Token.Logprobs, *ev.Token.Logprob)
				}
				got = append(got, *ev.Token.ID)
				text.WriteString(ev.Token.Text)
			}
			last := evs[len(evs)-1]
			if text.String() != want || !slices.Equal(got, wantIDs) || last.FinishReason == nil || *last.FinishReason != "stop" {
				t.Errorf("%s %s: %d events ending %v:\n got %q\nwant %q", path, tc.name, len(evs), last.FinishReason, text.String(), want)
			}
		}
	}
	// "/" without stream is /generate.
	var a apiNativeAnswer
	c.postJSON(t, "/", map[string]any{"inputs": "", "stream": false, "parameters": apiNativeParams(nil)}, &a)
	if len(a.GeneratedText) != 1 || a.GeneratedText[0] != gold.Text {
		t.Errorf("/ (stream false): %q", a.GeneratedText)
	}
}

// apiCheckAlternatives checks one token's native logprobs map: n alternatives
// ranked 1..n best first, plus the chosen token (with its rank) if it is
// not among them.
func apiCheckAlternatives(t *testing.T, where string, m map[string]apiNativeAlt, chosen int32, lp float64, n int) {
	t.Helper()
	type alt struct {
		id string
		apiNativeAlt
	}
	var alts []alt
	for id, a := range m {
		if a.Rank == nil || a.Logprob > 0 {
			t.Fatalf("%s: alternative %s: %+v", where, id, a)
		}
		alts = append(alts, alt{id, a})
	}
	sort.Slice(alts, func(i, j int) bool { return *alts[i].Rank < *alts[j].Rank })
	c, ok := m[fmt.Sprint(chosen)]
	if !ok || c.Logprob != lp {
		t.Fatalf("%s: the chosen token %d (%v) is not in %v", where, chosen, lp, m)
	}
	want := n
	if *c.Rank > n {
		want++
	}
	if len(alts) != want {
		t.Fatalf("%s: %d entries, want %d (%d alternatives, chosen rank %d)", where, len(alts), want, n, *c.Rank)
	}
	for i := range n {
		if *alts[i].Rank != i+1 || i > 0 && alts[i].Logprob > alts[i-1].Logprob {
			t.Fatalf("%s: entries not ranked best first: %+v", where, alts)
		}
	}
	var mass float64
	for _, a := range alts {
		mass += math.Exp(a.Logprob)
	}
	if mass > 1+1e-4 {
		t.Fatalf("%s: alternatives carry probability %v > 1", where, mass)
	}
}

func testNativeLogprobs(t *testing.T, c *apiClient) {
	// Greedy: the chosen token is the most likely one.
	evs := apiNativeStream(t, c, "/generate_stream", map[string]any{"inputs": "Once upon a time",
		"parameters": map[string]any{"max_new_tokens": 12, "logprobs": 3}})
	for i, ev := range evs {
		where := fmt.Sprintf("greedy event %d", i)
		apiCheckAlternatives(t, where, ev.Token.Logprobs, *ev.Token.ID, *ev.Token.Logprob, 3)
		if r := ev.Token.Logprobs[fmt.Sprint(*ev.Token.ID)].Rank; *r != 1 {
			t.Errorf("%s: greedy token has rank %d", where, *r)
		}
	}
	// A long stream whose client starts reading only after a second: infer
	// runs hundreds of tokens past the 64-entry top-logprob ring in shm, yet
	// every token arrives with all its alternatives (the apiserver copies
	// them out as they are published, not as the client reads).
	raw, _ := c.slowSSE(t, "/generate_stream", map[string]any{"inputs": "Once upon a time",
		"parameters": map[string]any{"max_new_tokens": 480, "ignore_eos": true, "logprobs": 20}}, time.Second)
	if len(raw) != 480 {
		t.Fatalf("%d events, want 480", len(raw))
	}
	for i, r := range raw {
		var ev apiNativeEvent
		apiJSON(t, r, &ev)
		apiCheckAlternatives(t, fmt.Sprintf("slow reader event %d", i), ev.Token.Logprobs, *ev.Token.ID, *ev.Token.Logprob, 20)
	}

	// Sampled at a high temperature: some tokens are not the best, and
	// their logprobs are taken at that temperature.
	var a apiNativeAnswer
	c.postJSON(t, "/generate", map[string]any{"inputs": "Once upon a time", "parameters": map[string]any{
		"max_new_tokens": 24, "logprobs": 5, "do_sample": true, "temperature": 1.8, "seed": 42, "return_details": true}}, &a)
	notBest := 0
	for i, tok := range a.Tokens {
		apiCheckAlternatives(t, fmt.Sprintf("sampled token %d", i), a.Logprobs[i], tok.ID, *tok.Logprob, 5)
		if *a.Logprobs[i][fmt.Sprint(tok.ID)].Rank > 1 {
			notBest++
		}
	}
	if notBest == 0 {
		t.Errorf("temperature 1.8 always picked the most likely token: %q", a.GeneratedText)
	}
}

// apiCompletion is /v1/completions' answer.
type apiCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text         string  `json:"text"`
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	} `json:"usage"`
}

func testCompletions(t *testing.T, c *apiClient, gold apiGolden) {
	const ouat = "Once upon a time"
	rest := strings.TrimPrefix(gold.Text, ouat)
	bosOnce := append([]int32{1}, gold.Once...)
	// Every prompt shape; the batch shapes run their prompts concurrently.
	cases := []struct {
		name   string
		prompt any
		want   []string
	}{
		{"string", ouat, []string{rest}},
		{"list of strings", []string{ouat, ouat + ", there was"}, []string{rest, strings.TrimPrefix(rest, ", there was")}},
		{"ids", []int32{1}, []string{gold.Text}},
		{"list of id lists", [][]int32{bosOnce, {1}}, []string{rest, gold.Text}},
	}
	for _, tc := range cases {
		var a apiCompletion
		c.postJSON(t, "/v1/completions", map[string]any{"model": "anything", "prompt": tc.prompt, "max_tokens": 511,
			"temperature": 0, "stop_token_ids": []int{1}}, &a)
		if a.Object != "text_completion" || !strings.HasPrefix(a.ID, "cmpl-") || a.Model != "anything" || len(a.Choices) != len(tc.want) {
			t.Fatalf("%s: answer %+v", tc.name, a)
		}
		for i, ch := range a.Choices {
			if ch.Index != i || ch.Text != tc.want[i] || ch.FinishReason == nil || *ch.FinishReason != "stop" {
				t.Errorf("%s choice %d (%v):\n got %q\nwant %q", tc.name, i, ch.FinishReason, ch.Text, tc.want[i])
			}
		}
		if a.Usage == nil || a.Usage.Total != a.Usage.Prompt+a.Usage.Completion || a.Usage.Completion == 0 {
			t.Errorf("%s: usage %+v", tc.name, a.Usage)
		}
	}
	// echo puts the prompt first.
	var e apiCompletion
	c.postJSON(t, "/v1/completions", map[string]any{"prompt": ouat, "max_tokens": 6, "temperature": 0, "echo": true}, &e)
	if got := e.Choices[0].Text; !strings.HasPrefix(got, ouat) || len(got) <= len(ouat) || !strings.HasPrefix(gold.Text, got) {
		t.Errorf("echo: %q is not the golden text's beginning past the prompt", got)
	}
	// Streaming, with the usage chunk.
	raw, _ := c.sse(t, "/v1/completions", map[string]any{"prompt": ouat, "max_tokens": 511, "temperature": 0,
		"stop_token_ids": []int{1}, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	var text strings.Builder
	var finish string
	var usage *struct{ Completion int }
	chunks := 0
	apiOpenAIEvents(t, raw, func(p string) {
		var ch apiCompletion
		apiJSON(t, p, &ch)
		if ch.Usage != nil {
			usage = &struct{ Completion int }{ch.Usage.Completion}
			if len(ch.Choices) != 0 {
				t.Errorf("usage chunk with choices: %s", p)
			}
			return
		}
		chunks++
		for _, cc := range ch.Choices {
			text.WriteString(cc.Text)
			if cc.FinishReason != nil {
				finish = *cc.FinishReason
			}
		}
	})
	if text.String() != rest || finish != "stop" || usage == nil || usage.Completion != gold.StopIndex+1-4 {
		t.Errorf("stream: %d chunks, finish %q, usage %+v:\n got %q\nwant %q", chunks, finish, usage, text.String(), rest)
	}
}

func testCompletionLogprobs(t *testing.T, c *apiClient, gold apiGolden) {
	var a apiCompletion
	c.postJSON(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0, "logprobs": 3}, &a)
	lp := a.Choices[0].Logprobs
	if lp == nil || len(lp.Tokens) != 10 || len(lp.TokenLogprobs) != 10 || len(lp.TopLogprobs) != 10 || len(lp.TextOffset) != 10 {
		t.Fatalf("logprobs %+v", lp)
	}
	if strings.Join(lp.Tokens, "") != a.Choices[0].Text || !strings.HasPrefix(strings.TrimPrefix(gold.Text, "Once upon a time"), a.Choices[0].Text) {
		t.Errorf("tokens %q do not spell the golden text %q", lp.Tokens, a.Choices[0].Text)
	}
	for i, top := range lp.TopLogprobs {
		best := math.Inf(-1)
		for _, v := range top {
			best = math.Max(best, v)
		}
		if len(top) < 1 || len(top) > 3 || lp.TokenLogprobs[i] == nil || *lp.TokenLogprobs[i] != best || best > 0 {
			t.Errorf("token %d %q: logprob %v, top %v (greedy: the token is the best of 3)", i, lp.Tokens[i], lp.TokenLogprobs[i], top)
		}
		if v, ok := top[lp.Tokens[i]]; !ok || v != *lp.TokenLogprobs[i] {
			t.Errorf("token %d %q missing from its top logprobs %v", i, lp.Tokens[i], top)
		}
	}
	// Streamed, each chunk carries its token's logprobs.
	raw, _ := c.sse(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0,
		"logprobs": 2, "stream": true})
	n := 0
	apiOpenAIEvents(t, raw, func(p string) {
		var ch apiCompletion
		apiJSON(t, p, &ch)
		for _, cc := range ch.Choices {
			if cc.Logprobs == nil || len(cc.Logprobs.TokenLogprobs) != len(cc.Logprobs.TopLogprobs) {
				t.Fatalf("chunk without logprobs: %s", p)
			}
			for i, top := range cc.Logprobs.TopLogprobs {
				if len(top) == 0 || len(top) > 2 || cc.Logprobs.TokenLogprobs[i] == nil {
					t.Fatalf("chunk logprobs %s", p)
				}
				n++
			}
		}
	})
	if n != 10 {
		t.Errorf("%d streamed tokens with logprobs, want 10", n)
	}
}

// testSeededN: n sequences of one request with a seed differ from each
// other (sequence i samples with seed+i), the same seed gives the same n
// completions again, another seed other ones.
func testSeededN(t *testing.T, c *apiClient) {
	run := func(seed int) []string {
		var a apiCompletion
		c.postJSON(t, "/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 32, "n": 3,
			"seed": seed, "temperature": 1}, &a)
		var out []string
		for _, ch := range a.Choices {
			out = append(out, ch.Text)
		}
		if len(out) != 3 {
			t.Fatalf("%d choices", len(out))
		}
		return out
	}
	a, b, other := run(5), run(5), run(1000)
	if !slices.Equal(a, b) {
		t.Errorf("seed 5 twice:\n%q\n%q", a, b)
	}
	if a[0] == a[1] || a[1] == a[2] || a[0] == a[2] {
		t.Errorf("n=3 with seed 5 repeats a completion: %q", a)
	}
	if slices.Equal(a, other) {
		t.Errorf("seeds 5 and 1000 gave the same completions: %q", a)
	}
	// The native API: sequence i of a seeded group is the single request
	// with seed+i.
	var g struct {
		Texts []string `json:"generated_text"`
	}
	c.postJSON(t, "/generate", map[string]any{"inputs": "Once upon a time", "parameters": map[string]any{
		"max_new_tokens": 32, "n": 2, "best_of": 2, "do_sample": true, "temperature": 1, "seed": 5}}, &g)
	var one apiNativeAnswer
	c.postJSON(t, "/generate", map[string]any{"inputs": "Once upon a time", "parameters": map[string]any{
		"max_new_tokens": 32, "do_sample": true, "temperature": 1, "seed": 6}}, &one)
	if len(g.Texts) != 2 || g.Texts[1] != one.GeneratedText[0] || g.Texts[0] != a[0] || g.Texts[1] != a[1] {
		t.Errorf("native n=2 seed 5 %q; single seed 6 %q; completions seed 5 %q", g.Texts, one.GeneratedText, a[:2])
	}
}

// testNativeAllowedTokens: LightLLM's allowed_token_ids are the only ids
// sampled (infer masks the rest: shm extras kind 4), greedy or not, and an
// out-of-vocabulary id is a 400.
func testNativeAllowedTokens(t *testing.T, c *apiClient, gold apiGolden) {
	allowed := []int32{}
	for id := int32(5); id < 200; id += 17 {
		if id != gold.Tokens[0] {
			allowed = append(allowed, id)
		}
	}
	for _, temp := range []float64{0, 1} {
		var a apiNativeAnswer
		c.postJSON(t, "/generate", map[string]any{"inputs": "Once upon a time", "parameters": map[string]any{
			"max_new_tokens": 24, "return_details": true, "temperature": temp, "do_sample": temp > 0, "allowed_token_ids": allowed}}, &a)
		if len(a.Tokens) != 24 {
			t.Fatalf("/generate with allowed_token_ids (temperature %v): %d tokens, want 24", temp, len(a.Tokens))
		}
		for i, tok := range a.Tokens {
			if !slices.Contains(allowed, tok.ID) {
				t.Fatalf("temperature %v: token %d is %d, not among the allowed %v", temp, i, tok.ID, allowed)
			}
		}
	}
	a2 := c.do(t, http.MethodPost, "/generate", map[string]any{"inputs": "", "parameters": map[string]any{
		"max_new_tokens": 4, "allowed_token_ids": []int{99999999}}})
	if err := (apiHostile{Status: 400, Code: "invalid_value", Param: "parameters.allowed_token_ids"}).Check(a2.status, a2.body); err != nil {
		t.Errorf("out-of-vocabulary allowed_token_ids: %v", err)
	}
}

// testNativeLogitBias: LightLLM's native logit_bias bans its keys (values
// are ignored) on every step, through the slot's banned-id field to infer's
// sampler; the OpenAI endpoints add the values instead (OpenAI's meaning).
func testNativeLogitBias(t *testing.T, c *apiClient, gold apiGolden) {
	first := gold.Tokens[0] // greedy's first token from BOS
	banned := map[string]any{fmt.Sprint(first): 5.0, fmt.Sprint(gold.Tokens[1]): -100}
	var a apiNativeAnswer
	c.postJSON(t, "/generate", map[string]any{"inputs": "", "parameters": map[string]any{
		"max_new_tokens": 24, "return_details": true, "logit_bias": banned}}, &a)
	if len(a.Tokens) != 24 {
		t.Fatalf("/generate with logit_bias: %d tokens, want 24", len(a.Tokens))
	}
	for i, tok := range a.Tokens {
		if tok.ID == first || tok.ID == gold.Tokens[1] {
			t.Fatalf("token %d is %d, a banned id (banned %v)", i, tok.ID, banned)
		}
	}
	a2 := c.do(t, http.MethodPost, "/generate", map[string]any{"inputs": "", "parameters": map[string]any{
		"max_new_tokens": 4, "logit_bias": map[string]any{"99999999": 1}}})
	if err := (apiHostile{Status: 400, Code: "invalid_value", Param: "parameters.logit_bias"}).Check(a2.status, a2.body); err != nil {
		t.Errorf("out-of-vocabulary logit_bias key: %v", err)
	}
	// The OpenAI endpoints take the values (#22): a small bias on the
	// greedy token changes nothing there, where the native API bans it.
	var a3 struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	c.postJSON(t, "/v1/completions", map[string]any{"prompt": "", "max_tokens": 4, "temperature": 0}, &a3)
	var a4 struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	c.postJSON(t, "/v1/completions", map[string]any{"prompt": "", "max_tokens": 4, "temperature": 0,
		"logit_bias": map[string]any{fmt.Sprint(first): 0.5}}, &a4)
	if a3.Choices[0].Text != a4.Choices[0].Text {
		t.Errorf("/v1/completions with logit_bias +0.5 on the greedy token: %q, without %q", a4.Choices[0].Text, a3.Choices[0].Text)
	}
}

// testNativeLengthDecay: exponential_decay_length_penalty [start, factor]
// reaches infer's sampler: with factor 1e6 from the start, the EOS logit
// explodes at the second token, so the request stops there on EOS; without
// it the same prompt runs to max_new_tokens.
func testNativeLengthDecay(t *testing.T, c *apiClient) {
	run := func(extra map[string]any) apiNativeAnswer {
		p := map[string]any{"max_new_tokens": 30, "return_details": true, "ignore_eos": false}
		for k, v := range extra {
			p[k] = v
		}
		var a apiNativeAnswer
		c.postJSON(t, "/generate", map[string]any{"inputs": "Once upon a time", "parameters": p}, &a)
		return a
	}
	if a := run(nil); a.Count != 30 || a.FinishReason != "length" {
		t.Fatalf("control: %d tokens, finish %q; want 30, length", a.Count, a.FinishReason)
	}
	a := run(map[string]any{"exponential_decay_length_penalty": []any{0, 1e6}})
	if a.Count != 2 || a.FinishReason != "stop" {
		t.Fatalf("with the decay: %d tokens, finish %q; want 2, stop (EOS at the second token)", a.Count, a.FinishReason)
	}
}
