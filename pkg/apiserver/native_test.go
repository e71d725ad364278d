package apiserver_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

type nativeResp struct {
	GeneratedText     []string          `json:"generated_text"`
	CountOutputTokens json.RawMessage   `json:"count_output_tokens"`
	FinishReason      json.RawMessage   `json:"finish_reason"`
	PromptTokens      int               `json:"prompt_tokens"`
	Tokens            json.RawMessage   `json:"tokens"`
	Logprobs          json.RawMessage   `json:"logprobs"`
	InputUsage        map[string]int    `json:"input_usage"`
	Extra             map[string]string `json:"-"`
}

type nativeEvent struct {
	Token struct {
		ID                *int32                     `json:"id"`
		Text              string                     `json:"text"`
		Logprob           *float64                   `json:"logprob"`
		Special           bool                       `json:"special"`
		CountOutputTokens int                        `json:"count_output_tokens"`
		PromptTokens      int                        `json:"prompt_tokens"`
		Logprobs          map[string]json.RawMessage `json:"logprobs"`
	} `json:"token"`
	GeneratedText *string        `json:"generated_text"`
	Finished      bool           `json:"finished"`
	FinishReason  *string        `json:"finish_reason"`
	Details       any            `json:"details"`
	InputUsage    map[string]int `json:"input_usage"`
}

func TestNativeGenerate(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	script := ts.tok.Encode(fakebackend.GreedyReply, false)
	prompt := ts.tok.Encode("Once upon a time", true)
	cases := map[string]struct {
		path, body string
	}{
		"generate":        {"/generate", `{"inputs":"Once upon a time","parameters":{"do_sample":false}}`},
		"compat":          {"/", `{"inputs":"Once upon a time","parameters":{},"stream":false}`},
		"no parameters":   {"/generate", `{"inputs":"Once upon a time"}`},
		"token id inputs": {"/generate", `{"inputs":` + mustJSON(t, prompt) + `,"parameters":{"max_new_tokens":1000}}`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.post(t, tc.path, tc.body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			got := decode[nativeResp](t, r.body)
			if len(got.GeneratedText) != 1 || strings.TrimPrefix(got.GeneratedText[0], " ") != fakebackend.GreedyReply {
				t.Errorf("generated_text = %q, want [%q]", got.GeneratedText, fakebackend.GreedyReply)
			}
			if string(got.CountOutputTokens) != itoa(len(script)+1) { // + EOS
				t.Errorf("count_output_tokens = %s, want %d", got.CountOutputTokens, len(script)+1)
			}
			if string(got.FinishReason) != `"stop"` || got.PromptTokens != len(prompt) {
				t.Errorf("finish_reason %s prompt_tokens %d, want \"stop\" %d", got.FinishReason, got.PromptTokens, len(prompt))
			}
			if got.Tokens != nil {
				t.Errorf("tokens present without return_details: %s", got.Tokens)
			}
			var lps []map[string]json.RawMessage
			if err := json.Unmarshal(got.Logprobs, &lps); err != nil || len(lps) != len(script)+1 {
				t.Errorf("logprobs: %d entries (%v), want one per token", len(lps), err)
			}
			if got.InputUsage["input_text_tokens"] != len(prompt) {
				t.Errorf("input_usage = %v", got.InputUsage)
			}
		})
	}
}

func TestNativeReturnDetailsAndN(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	r := ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"do_sample":true,"n":3,"best_of":3,"seed":7,"max_new_tokens":5,"return_details":true}}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	got := decode[nativeResp](t, r.body)
	if len(got.GeneratedText) != 3 {
		t.Fatalf("generated_text has %d entries, want 3", len(got.GeneratedText))
	}
	if string(got.CountOutputTokens) != "[5,5,5]" || string(got.FinishReason) != `["length","length","length"]` {
		t.Errorf("count_output_tokens %s finish_reason %s", got.CountOutputTokens, got.FinishReason)
	}
	var toks [][]map[string]any
	if err := json.Unmarshal(got.Tokens, &toks); err != nil || len(toks) != 3 || len(toks[0]) != 5 {
		t.Fatalf("tokens: %v %s", err, got.Tokens)
	}
	// Keys in LightLLM's order.
	re := regexp.MustCompile(`^\[\[\{"id":\d+,"logprob":-?[\d.e-]+,"cumlogprob":-?[\d.e-]+,"special":false,"count_output_tokens":1,"mtp_accepted_token_num":0,"prompt_tokens":\d+,"prompt_cache_len":\d+,"text":"`)
	if !re.Match(got.Tokens) {
		t.Errorf("tokens entry shape: %.300s", got.Tokens)
	}
	if got.GeneratedText[0] == got.GeneratedText[1] && got.GeneratedText[1] == got.GeneratedText[2] {
		t.Errorf("n=3 with a seed gave identical texts %q", got.GeneratedText)
	}
	if g := ts.be.Submitted()[0]; g.N != 3 || g.Params.Seed != 7 || g.SeqSeed(2) != 9 {
		t.Errorf("group N=%d seed=%d seqseed(2)=%d", g.N, g.Params.Seed, g.SeqSeed(2))
	}
}

func TestNativeStreamFraming(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	prompt := ts.tok.Encode("Once upon a time", true)
	script := ts.tok.Encode(fakebackend.GreedyReply, false)
	for _, path := range []string{"/generate_stream", "/"} {
		t.Run(path, func(t *testing.T) {
			r := ts.post(t, path, `{"inputs":"Once upon a time","parameters":{"do_sample":false},"stream":true}`)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			events := sseEvents(t, r.body, "data:")
			if len(events) != len(script)+1 {
				t.Fatalf("%d events, want one per token (%d)", len(events), len(script)+1)
			}
			// The exact shape of LightLLM's event: no space after "data:",
			// compact JSON, keys in order, null details.
			shape := regexp.MustCompile(`^\{"token":\{"id":\d+,"text":"[^"]*","logprob":-?[\d.e-]+,"special":false,` +
				`"count_output_tokens":1,"prompt_tokens":` + itoa(len(prompt)) + `,"logprobs":\{"\d+":\{"logprob":-?[\d.e-]+,"rank":1,"decoded_token":"[^"]*"\}\}\},` +
				`"generated_text":null,"finished":false,"finish_reason":null,"details":null,` +
				`"input_usage":\{"input_text_tokens":` + itoa(len(prompt)) + `,"input_audio_tokens":0,"input_image_tokens":0\}\}$`)
			if !shape.MatchString(events[0]) {
				t.Errorf("first event shape:\n%s", events[0])
			}
			var text strings.Builder
			for i, e := range events {
				if e == "[DONE]" {
					t.Fatal("native stream must not send [DONE]")
				}
				ev := decode[nativeEvent](t, []byte(e))
				text.WriteString(ev.Token.Text)
				last := i == len(events)-1
				if ev.Finished != last || (ev.FinishReason != nil) != last || ev.Token.CountOutputTokens != i+1 {
					t.Errorf("event %d: finished=%v reason=%v count=%d", i, ev.Finished, ev.FinishReason, ev.Token.CountOutputTokens)
				}
			}
			if strings.TrimPrefix(text.String(), " ") != fakebackend.GreedyReply {
				t.Errorf("streamed text %q", text.String())
			}
		})
	}
}

func TestNativeStreamCJKNeverSplits(t *testing.T) {
	reply := "小猫说你好 🚀😀 café 世界"
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{Reply: func(*apiserver.Group, int) string { return reply }})
	r := ts.post(t, "/generate_stream", `{"inputs":"Hi","parameters":{}}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var text strings.Builder
	empty := 0
	for _, e := range sseEvents(t, r.body, "data:") {
		ev := decode[nativeEvent](t, []byte(e))
		if strings.ContainsRune(ev.Token.Text, '\uFFFD') {
			t.Fatalf("event text holds U+FFFD: %q", ev.Token.Text)
		}
		if ev.Token.Text == "" {
			empty++
		}
		text.WriteString(ev.Token.Text)
	}
	if strings.TrimPrefix(text.String(), " ") != reply {
		t.Errorf("streamed %q, want %q", text.String(), reply)
	}
	if empty == 0 {
		t.Error("byte-fallback tokens should produce empty pieces while a character is incomplete")
	}
}

func TestNativeStreamRequiresBestOf1(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	r := ts.post(t, "/generate_stream", `{"inputs":"Hi","parameters":{"n":2,"best_of":2}}`)
	if r.status != 400 || !strings.Contains(string(r.body), "best_of == 1") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

func TestLengthRule(t *testing.T) {
	cases := map[string]struct {
		maxReq, kv   int
		body         string
		status       int
		wantMaxNew   int
		promptTokens int
	}{
		"default cut to max_req_total_len": {64, 4096, `{"inputs":"Once upon a time"}`, 200, 64 - 5, 5},
		"cut by kv capacity - 36":          {512, 50, `{"inputs":"Once upon a time"}`, 200, 50 - 36 - 5, 5},
		"fits unchanged":                   {64, 4096, `{"inputs":"Once upon a time","parameters":{"max_new_tokens":3}}`, 200, 3, 5},
		"exactly full":                     {6, 4096, `{"inputs":"Once upon a time"}`, 200, 1, 5},
		"nothing fits":                     {5, 4096, `{"inputs":"Once upon a time"}`, 400, 0, 5},
		"min_new_tokens clamped too":       {10, 4096, `{"inputs":"Once upon a time","parameters":{"min_new_tokens":8,"max_new_tokens":9}}`, 200, 5, 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, apiserver.Options{MaxReqTotalLen: tc.maxReq}, fakebackend.Options{MaxTotalTokens: tc.kv})
			r := ts.post(t, "/generate", tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status != 200 {
				e := decode[errResp](t, r.body)
				if e.Error.Code == nil || *e.Error.Code != "context_length_exceeded" {
					t.Errorf("error %+v", e.Error)
				}
				return
			}
			g := ts.be.Submitted()[0]
			if len(g.Prompt) != tc.promptTokens || g.Params.MaxNewTokens != tc.wantMaxNew || g.Params.MinNewTokens > g.Params.MaxNewTokens {
				t.Errorf("prompt %d max_new_tokens %d min %d, want %d %d", len(g.Prompt), g.Params.MaxNewTokens,
					g.Params.MinNewTokens, tc.promptTokens, tc.wantMaxNew)
			}
		})
	}
}

func TestNativeParamsReachBackend(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	body := `{"inputs":"Hi","parameters":{"do_sample":true,"temperature":0.7,"top_p":0.9,"top_k":40,
		"repetition_penalty":1.1,"presence_penalty":0.5,"frequency_penalty":0.25,"input_penalty":true,
		"max_new_tokens":4,"min_new_tokens":2,"ignore_eos":true,"stop_sequences":["\n\n",[5,6]],"seed":42,
		"skip_special_tokens":true,"add_special_tokens":false,"add_spaces_between_special_tokens":false,
		"print_eos_token":true,"disable_prompt_cache":true,"exponential_decay_length_penalty":[3,1.5],
		"logit_bias":{"7":-100},"allowed_token_ids":[10,11,12],"logprobs":2,"return_details":false}}`
	r := ts.post(t, "/generate", body)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	p := ts.be.Submitted()[0].Params
	want := apiserver.SamplingParams{PrintEOSToken: true, Params: sampler.Params{DoSample: true, Temperature: 0.7, TopP: 0.9, TopK: 40, RepetitionPenalty: 1.1,
		PresencePenalty: 0.5, FrequencyPenalty: 0.25, InputPenalty: true, MaxNewTokens: 4, MinNewTokens: 2,
		IgnoreEOS: true, Seed: 42, SkipSpecialTokens: true, DisablePromptCache: true,
		DecayStart: 3, DecayFactor: 1.5, TopLogprobs: 2}}
	got := p
	got.StopSequences, got.BannedTokenIDs, got.AllowedTokenIDs = nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("params\n got %+v\nwant %+v", got, want)
	}
	if len(p.StopSequences) != 2 || p.StopSequences[0].Text != "\n\n" || len(p.StopSequences[0].IDs) == 0 ||
		p.StopSequences[1].Text != "" || mustJSON(t, p.StopSequences[1].IDs) != "[5,6]" {
		t.Errorf("stop sequences %+v", p.StopSequences)
	}
	if mustJSON(t, p.BannedTokenIDs) != "[7]" || mustJSON(t, p.AllowedTokenIDs) != "[10,11,12]" {
		t.Errorf("banned %v allowed %v", p.BannedTokenIDs, p.AllowedTokenIDs)
	}
	if len(ts.be.Submitted()[0].Prompt) != len(ts.tok.Encode("Hi", false)) {
		t.Error("add_special_tokens=false must not add BOS")
	}
}

func TestGreedyNormalization(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	for name, body := range map[string]string{
		"do_sample false": `{"inputs":"Hi","parameters":{"do_sample":false,"temperature":0.5,"top_k":5,"top_p":0.5}}`,
		"temperature 0":   `{"inputs":"Hi","parameters":{"do_sample":true,"temperature":0,"top_k":5}}`,
	} {
		t.Run(name, func(t *testing.T) {
			before := len(ts.be.Submitted())
			if r := ts.post(t, "/generate", body); r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			p := ts.be.Submitted()[before].Params
			if p.TopK != 1 || p.Temperature != 1 {
				t.Errorf("greedy not normalized: %+v", p)
			}
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int) string { return strings.TrimSpace(mustJSONNoT(n)) }

func mustJSONNoT(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
