package apiserver_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type completionJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
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
	Usage *usageJSON `json:"usage"`
}

type chatJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token string `json:"token"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON `json:"usage"`
}

func greedyText(ts *testServer) string { return " " + fakebackend.GreedyReply }

func TestCompletions(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	ids := mustJSON(t, ts.tok.Encode("Once upon a time", true))
	prompt := len(ts.tok.Encode("Once upon a time", true))
	cases := map[string]struct {
		body    string
		choices int
		prompts int
	}{
		"string":         {`{"model":"m","prompt":"Once upon a time","temperature":0}`, 1, 1},
		"list of string": {`{"prompt":["Once upon a time","Once upon a time"],"temperature":0}`, 2, 2},
		"token ids":      {`{"prompt":` + ids + `,"temperature":0}`, 1, 1},
		"id lists":       {`{"prompt":[` + ids + `,` + ids + `,` + ids + `],"temperature":0}`, 3, 3},
		"n=2 greedy":     {`{"prompt":"Once upon a time","temperature":0,"n":2}`, 2, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.post(t, "/v1/completions", tc.body, "X-Request-Id", "req-"+strings.ReplaceAll(name, " ", "_"))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := decode[completionJSON](t, r.body)
			if got.Object != "text_completion" || got.ID != "cmpl-req-"+strings.ReplaceAll(name, " ", "_") || got.Created != 1700000000 {
				t.Errorf("envelope %+v", got)
			}
			if len(got.Choices) != tc.choices {
				t.Fatalf("%d choices, want %d", len(got.Choices), tc.choices)
			}
			for i, c := range got.Choices {
				if c.Index != i || c.Text != greedyText(ts) || c.FinishReason == nil || *c.FinishReason != "stop" || c.Logprobs != nil {
					t.Errorf("choice %d: %+v", i, c)
				}
			}
			script := len(ts.tok.Encode(fakebackend.GreedyReply, false)) + 1
			u := got.Usage
			if u == nil || u.PromptTokens != tc.prompts*prompt || u.CompletionTokens != tc.choices*script ||
				u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage %+v (prompt %d, script %d)", u, prompt, script)
			}
		})
	}
}

func TestCompletionsEchoLogprobsAndCache(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	body := `{"prompt":"Once upon a time","temperature":0,"max_tokens":4,"echo":true,"logprobs":2}`
	first := decode[completionJSON](t, ts.post(t, "/v1/completions", body).body)
	c := first.Choices[0]
	if !strings.HasPrefix(c.Text, "Once upon a time Once") || *c.FinishReason != "length" {
		t.Errorf("echo text %q reason %v", c.Text, *c.FinishReason)
	}
	prompt := ts.tok.Encode("Once upon a time", true)
	lp := c.Logprobs
	if lp == nil || len(lp.Tokens) != len(prompt)+4 || len(lp.TokenLogprobs) != len(lp.Tokens) || len(lp.TextOffset) != len(lp.Tokens) {
		t.Fatalf("logprobs %+v", lp)
	}
	if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil || lp.TokenLogprobs[len(prompt)] == nil || len(lp.TopLogprobs[len(prompt)]) != 2 {
		t.Errorf("prompt tokens must have null logprobs, generated ones 2 alternatives: %v %v", lp.TokenLogprobs, lp.TopLogprobs)
	}
	for i := 1; i < len(lp.TextOffset); i++ {
		if lp.TextOffset[i] != lp.TextOffset[i-1]+len(lp.Tokens[i-1]) {
			t.Fatalf("text_offset not cumulative: %v", lp.TextOffset)
		}
	}
	// The BOS a string prompt got is not in the echoed text: an empty token,
	// so every offset points at its token in the text.
	if strings.Join(lp.Tokens, "") != c.Text || lp.Tokens[0] != "" || lp.TextOffset[1] != 0 {
		t.Errorf("tokens %q do not spell the echoed text %q (offsets %v)", lp.Tokens, c.Text, lp.TextOffset)
	}
	second := decode[completionJSON](t, ts.post(t, "/v1/completions", body).body)
	if second.Usage.PromptTokensDetails.CachedTokens != len(prompt)-1 || first.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("cached_tokens %d then %d, want 0 then %d", first.Usage.PromptTokensDetails.CachedTokens,
			second.Usage.PromptTokensDetails.CachedTokens, len(prompt)-1)
	}
}

func TestSeededNReproducible(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"Hi","n":3,"seed":1234,"temperature":1,"max_tokens":30}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"n":3,"seed":1234,"max_tokens":30}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if strings.Contains(tc.path, "chat") {
				ts = startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
			}
			texts := func() []string {
				r := ts.post(t, tc.path, tc.body)
				if r.status != 200 {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				var out []string
				got := decode[chatJSON](t, r.body)
				for _, c := range got.Choices {
					out = append(out, c.Message.Content)
				}
				if len(out) == 0 || out[0] == "" {
					out = nil
					for _, c := range decode[completionJSON](t, r.body).Choices {
						out = append(out, c.Text)
					}
				}
				return out
			}
			a, b := texts(), texts()
			if len(a) != 3 || strings.Join(a, "|") != strings.Join(b, "|") {
				t.Fatalf("same seed gave different completions:\n%q\n%q", a, b)
			}
			if a[0] == a[1] || a[1] == a[2] || a[0] == a[2] {
				t.Errorf("n=3 completions are not all different: %q", a)
			}
		})
	}
}

func TestBestOf(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	r := ts.post(t, "/v1/completions", `{"prompt":"Hi","n":1,"best_of":3,"seed":5,"max_tokens":3}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got := decode[completionJSON](t, r.body); len(got.Choices) != 1 || ts.be.Submitted()[0].N != 3 {
		t.Errorf("best_of 3, n 1: %d choices, group N %d", len(got.Choices), ts.be.Submitted()[0].N)
	}
}

func TestCompletionsStream(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	script := len(ts.tok.Encode(fakebackend.GreedyReply, false)) + 1
	for name, tc := range map[string]struct {
		body      string
		wantUsage bool
	}{
		"plain":         {`{"prompt":"Once upon a time","temperature":0,"stream":true}`, false},
		"include_usage": {`{"prompt":"Once upon a time","temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, true},
	} {
		t.Run(name, func(t *testing.T) {
			r := ts.post(t, "/v1/completions", tc.body, "X-Request-Id", "abc")
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			events := sseEvents(t, r.body, "data: ")
			if events[len(events)-1] != "[DONE]" {
				t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
			}
			events = events[:len(events)-1]
			shape := regexp.MustCompile(`^\{"id":"cmpl-abc","object":"text_completion","created":1700000000,"model":"stories260K",` +
				`"choices":\[\{"text":"[^"]*","index":0,"logprobs":null,"finish_reason":(null|"stop")\}\]` + map[bool]string{true: `,"usage":null`, false: ``}[tc.wantUsage] + `\}$`)
			var text strings.Builder
			body := events
			if tc.wantUsage {
				body = events[:len(events)-1]
				u := decode[completionJSON](t, []byte(events[len(events)-1]))
				if len(u.Choices) != 0 || u.Usage == nil || u.Usage.CompletionTokens != script {
					t.Errorf("usage chunk %s", events[len(events)-1])
				}
			}
			for i, e := range body {
				if !shape.MatchString(e) {
					t.Fatalf("chunk %d shape: %s", i, e)
				}
				c := decode[completionJSON](t, []byte(e)).Choices[0]
				text.WriteString(c.Text)
				if (c.FinishReason != nil) != (i == len(body)-1) {
					t.Errorf("finish_reason on chunk %d of %d", i, len(body))
				}
			}
			if text.String() != greedyText(ts) {
				t.Errorf("streamed %q", text.String())
			}
		})
	}
}

func TestChat(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	r := ts.post(t, "/v1/chat/completions", `{"model":"stories","messages":[{"role":"system","content":"Be brief."},
		{"role":"user","content":[{"type":"text","text":"Tell"},{"type":"text","text":"a story"}]}],"temperature":0,"logprobs":true,"top_logprobs":2}`,
		"X-Request-Id", "chat-1")
	if r.status != 200 || r.header.Get("X-Request-Id") != "chat-1" {
		t.Fatalf("status %d x-request-id %q: %s", r.status, r.header.Get("X-Request-Id"), r.body)
	}
	got := decode[chatJSON](t, r.body)
	if got.ID != "chatcmpl-chat-1" || got.Object != "chat.completion" || got.Model != "stories" || len(got.Choices) != 1 {
		t.Fatalf("envelope %s", r.body)
	}
	c := got.Choices[0]
	if c.Message.Role != "assistant" || c.Message.Content != greedyText(ts) || *c.FinishReason != "stop" {
		t.Errorf("choice %+v", c)
	}
	if c.Logprobs == nil || len(c.Logprobs.Content) == 0 || len(c.Logprobs.Content[0].TopLogprobs) != 2 || len(c.Logprobs.Content[0].Bytes) == 0 {
		t.Errorf("logprobs %+v", c.Logprobs)
	}
	wantPrompt := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nTell\na story<|im_end|>\n<|im_start|>assistant\n"
	if g := ts.be.Submitted()[0]; ts.tok.Decode(g.Prompt, false) != ts.tok.Decode(ts.tok.Encode(wantPrompt, false), false) {
		t.Errorf("prompt %q, want %q", ts.tok.Decode(g.Prompt, false), wantPrompt)
	} else if g.Params.AddSpecialTokens || g.Prompt[0] == ts.tok.BOS() {
		t.Error("chat prompts are encoded without special tokens (the template writes them)")
	}
	if got.Usage == nil || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
		t.Errorf("usage %+v", got.Usage)
	}
}

func TestChatStream(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	r := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"temperature":0,"stream":true,
		"stream_options":{"include_usage":true},"n":2}`, "X-Request-Id", "s1")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	events := sseEvents(t, r.body, "data: ")
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("no [DONE]: %q", events[len(events)-1])
	}
	usage := decode[chatJSON](t, []byte(events[len(events)-2]))
	if len(usage.Choices) != 0 || usage.Usage == nil || usage.Usage.CompletionTokens == 0 {
		t.Errorf("usage chunk %s", events[len(events)-2])
	}
	role := regexp.MustCompile(`^\{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1700000000,"model":"stories260K",` +
		`"choices":\[\{"index":[01],"delta":\{"role":"assistant","content":""\},"logprobs":null,"finish_reason":null\}\],"usage":null\}$`)
	final := regexp.MustCompile(`"delta":\{\},"logprobs":null,"finish_reason":"stop"\}\],"usage":null\}$`)
	text := map[int]*strings.Builder{0: {}, 1: {}}
	state := map[int]int{} // 0 none, 1 role seen, 2 finished
	for _, e := range events[:len(events)-2] {
		ch := decode[chatJSON](t, []byte(e))
		c := ch.Choices[0]
		switch {
		case state[c.Index] == 0:
			if !role.MatchString(e) {
				t.Fatalf("first chunk of choice %d is not the role chunk: %s", c.Index, e)
			}
			state[c.Index] = 1
		case c.FinishReason != nil:
			if !final.MatchString(e) || state[c.Index] != 1 {
				t.Fatalf("final chunk: %s", e)
			}
			state[c.Index] = 2
		default:
			if state[c.Index] != 1 || c.Delta == nil || c.Delta.Content == nil || c.Delta.Role != nil {
				t.Fatalf("content chunk: %s", e)
			}
			text[c.Index].WriteString(*c.Delta.Content)
		}
	}
	for i := 0; i < 2; i++ {
		if state[i] != 2 || text[i].String() != greedyText(ts) {
			t.Errorf("choice %d: state %d text %q", i, state[i], text[i].String())
		}
	}
}

func TestChatWithoutTemplate(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	r := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
	e := decode[errResp](t, r.body)
	if r.status != 400 || e.Error.Code == nil || *e.Error.Code != "no_chat_template" || !strings.Contains(e.Error.Message, "chat template") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

func TestChatTemplateRaise(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: strictTemplate}, fakebackend.Options{})
	r := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"Hi"}]}`)
	if r.status != 400 || !strings.Contains(string(r.body), "roles must alternate") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

func TestChatMaxTokens(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	for name, tc := range map[string]struct {
		body string
		want int
	}{
		"max_tokens":                {`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3}`, 3},
		"max_completion_tokens":     {`{"messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":4}`, 4},
		"max_completion_tokens won": {`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":9,"max_completion_tokens":2}`, 2},
	} {
		t.Run(name, func(t *testing.T) {
			got := decode[chatJSON](t, ts.post(t, "/v1/chat/completions", tc.body).body)
			if len(got.Choices) != 1 || *got.Choices[0].FinishReason != "length" || got.Usage.CompletionTokens != tc.want {
				t.Errorf("%+v", got)
			}
		})
	}
}

// TestStopStrings: the backend (like the detokenizer) reports the match on
// the piece that completes it; OpenAI endpoints end the text before the
// stop string, the native API keeps LightLLM's pieces (stop included).
func TestStopStrings(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	const before = " Once upon a time, there was a "
	cases := map[string]struct {
		path, body string
		stream     bool
		want       string
	}{
		"completions":      {"/v1/completions", `{"prompt":"Hi","temperature":0,"stop":["little","zzz"]}`, false, before},
		"completions sse":  {"/v1/completions", `{"prompt":"Hi","temperature":0,"stop":"little","stream":true}`, true, before},
		"chat":             {"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"temperature":0,"stop":"little"}`, false, before},
		"chat sse":         {"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"temperature":0,"stop":["little"],"stream":true}`, true, before},
		"multi-token stop": {"/v1/completions", `{"prompt":"Hi","temperature":0,"stop":"a little girl"}`, false, " Once upon a time, there was "},
		"include stop str": {"/v1/completions", `{"prompt":"Hi","temperature":0,"stop":"little","include_stop_str_in_output":true}`, false, before + "little"},
		"native":           {"/generate", `{"inputs":"Hi","parameters":{"stop_sequences":["little"]}}`, false, before + "little"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.post(t, tc.path, tc.body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var text, reason string
			switch {
			case tc.path == "/generate":
				got := decode[nativeResp](t, r.body)
				text, reason = got.GeneratedText[0], strings.Trim(string(got.FinishReason), `"`)
			case tc.stream:
				for _, e := range sseEvents(t, r.body, "data: ") {
					if e == "[DONE]" {
						continue
					}
					ch := decode[chatJSON](t, []byte(e))
					for _, c := range ch.Choices {
						if c.Delta != nil && c.Delta.Content != nil {
							text += *c.Delta.Content
						}
						if c.FinishReason != nil {
							reason = *c.FinishReason
						}
					}
					for _, c := range decode[completionJSON](t, []byte(e)).Choices {
						text += c.Text
					}
				}
			case strings.Contains(tc.path, "chat"):
				got := decode[chatJSON](t, r.body)
				text, reason = got.Choices[0].Message.Content, *got.Choices[0].FinishReason
			default:
				got := decode[completionJSON](t, r.body)
				text, reason = got.Choices[0].Text, *got.Choices[0].FinishReason
			}
			if text != tc.want || reason != "stop" {
				t.Errorf("text %q reason %q, want %q stop", text, reason, tc.want)
			}
		})
	}
}

func TestModelsAndModelName(t *testing.T) {
	ts := startServer(t, apiserver.Options{MaxReqTotalLen: 300}, fakebackend.Options{})
	type modelList struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	models := decode[modelList](t, ts.get(t, "/v1/models").body)
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != "stories260K" || models.Data[0].MaxModelLen != 300 {
		t.Errorf("%+v", models)
	}
	strict := startServer(t, apiserver.Options{ModelName: "tiny", StrictModelName: true}, fakebackend.Options{})
	r := strict.post(t, "/v1/completions", `{"model":"gpt-4","prompt":"Hi"}`)
	if e := decode[errResp](t, r.body); r.status != 404 || *e.Error.Code != "model_not_found" {
		t.Errorf("strict model: %d %s", r.status, r.body)
	}
	if r := strict.post(t, "/v1/completions", `{"model":"tiny","prompt":"Hi","max_tokens":2}`); r.status != 200 {
		t.Errorf("served name refused: %d %s", r.status, r.body)
	}
	if got := strict.get(t, "/get_model_name"); string(got.body) != `{"model_name":"tiny"}` {
		t.Errorf("get_model_name: %s", got.body)
	}
}
