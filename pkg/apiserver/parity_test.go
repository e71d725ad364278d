package apiserver_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestUnknownOpenAIFieldsIgnored(t *testing.T) {
	var logs lockedBuffer
	tok := storiesTokenizer(t)
	ts := startWithLog(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.New(tok, fakebackend.Options{}), tok,
		zerolog.New(&logs))
	cases := []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"completions unknown", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"verbosity":"low","foo":{"x":1}}`, 200, "", ""},
		{"completions unknown again", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"verbosity":"high"}`, 200, "", ""},
		{"chat unknown", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"verbosity":"low"}`, 200, "", ""},
		{"stream_options unknown", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`, 200, "", ""},
		{"vLLM extras accepted", "/v1/completions", `{"prompt":"Hi","max_tokens":3,"top_k":5,"repetition_penalty":1.1,"min_tokens":1,"ignore_eos":true,` +
			`"skip_special_tokens":false,"include_stop_str_in_output":true,"spaces_between_special_tokens":false,"stop_token_ids":[2],"seed":7}`, 200, "", ""},
		{"vLLM off values accepted", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"use_beam_search":false,"length_penalty":1.0,"guided_json":null,"bad_words":[],"priority":0}`, 200, "", ""},
		{"vLLM beam search refused", "/v1/completions", `{"prompt":"Hi","use_beam_search":true}`, 400, "unsupported_parameter", "use_beam_search"},
		{"vLLM bad_words refused", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"bad_words":["x"]}`, 400, "unsupported_parameter", "bad_words"},
		{"negative seed", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"seed":-12345}`, 200, "", ""},
		{"native stays strict", "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2,"verbosity":"low"}}`, 400, "unknown_parameter", "parameters.verbosity"},
		{"native negative seed", "/generate", `{"inputs":"Hi","parameters":{"seed":-2}}`, 400, "invalid_value", "parameters.seed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post(t, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code == "" {
				return
			}
			e := decode[errResp](t, r.body)
			if e.Error.Code == nil || *e.Error.Code != tc.code || e.Error.Param == nil || *e.Error.Param != tc.param {
				t.Errorf("error %s, want code %s param %s", r.body, tc.code, tc.param)
			}
		})
	}
	for field, want := range map[string]int{`"field":"verbosity"`: 1, `"field":"foo"`: 1, `"field":"stream_options.include_obfuscation"`: 1} {
		if n := strings.Count(logs.String(), field); n != want {
			t.Errorf("%s warned %d times, want %d:\n%s", field, n, want, logs.String())
		}
	}
}

func TestNegativeSeedReproducible(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	text := func(seed string) string {
		r := ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":12,"temperature":1,"seed":`+seed+`}`)
		if r.status != 200 {
			t.Fatalf("seed %s: %d %s", seed, r.status, r.body)
		}
		return decode[completionJSON](t, r.body).Choices[0].Text
	}
	if a, b := text("-7"), text("-7"); a != b {
		t.Errorf("seed -7 not reproducible: %q vs %q", a, b)
	}
}

// TestOpenAILogitBias: OpenAI's logit_bias reaches the backend with its
// values, on both endpoints, any number of entries; 0 entries are dropped,
// null and {} are no bias; the native API keeps LightLLM's meaning (keys
// banned).
func TestOpenAILogitBias(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	many := make([]string, 300)
	wantMany := map[int32]float32{}
	for i := range many {
		many[i] = fmt.Sprintf(`"%d":%d`, i+10, i%201-100)
		if v := i%201 - 100; v != 0 {
			wantMany[int32(i+10)] = float32(v)
		}
	}
	cases := []struct {
		name, path, body string
		want             map[int32]float32
		banned           []int32
	}{
		{"completions", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"logit_bias":{"5":-100,"7":2.5,"9":0}}`,
			map[int32]float32{5: -100, 7: 2.5}, nil},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"logit_bias":{"100":100}}`,
			map[int32]float32{100: 100}, nil},
		{"300 entries", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"logit_bias":{` + strings.Join(many, ",") + `}}`, wantMany, nil},
		{"null", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"logit_bias":null}`, nil, nil},
		{"empty", "/v1/completions", `{"prompt":"Hi","max_tokens":2,"logit_bias":{}}`, nil, nil},
		{"native bans its keys", "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2,"logit_bias":{"5":3}}}`, nil, []int32{5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(ts.be.Submitted())
			if r := ts.post(t, tc.path, tc.body); r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			sub := ts.be.Submitted()
			if len(sub) != before+1 {
				t.Fatalf("%d submissions, want %d", len(sub), before+1)
			}
			p := sub[len(sub)-1].Params
			if !maps.Equal(p.LogitBias, tc.want) || !slices.Equal(p.BannedTokenIDs, tc.banned) {
				t.Errorf("bias %v banned %v, want %v and %v", p.LogitBias, p.BannedTokenIDs, tc.want, tc.banned)
			}
		})
	}
}

func TestServedModelNames(t *testing.T) {
	ts := startServer(t, apiserver.Options{ServedModelNames: []string{"tiny", "tiny-alias"}}, fakebackend.Options{})
	type modelList struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	m := decode[modelList](t, ts.get(t, "/v1/models").body)
	if len(m.Data) != 2 || m.Data[0].ID != "tiny" || m.Data[1].ID != "tiny-alias" {
		t.Errorf("/v1/models: %+v", m)
	}
	for _, tc := range []struct {
		model  string
		status int
	}{{"tiny", 200}, {"tiny-alias", 200}, {"", 200}, {"stories260K", 404}, {"gpt-4", 404}} {
		r := ts.post(t, "/v1/completions", `{"model":"`+tc.model+`","prompt":"Hi","max_tokens":2}`)
		if r.status != tc.status {
			t.Errorf("model %q: %d %s", tc.model, r.status, r.body)
		}
		if tc.status == 404 {
			if e := decode[errResp](t, r.body); e.Error.Code == nil || *e.Error.Code != "model_not_found" {
				t.Errorf("model %q: %s", tc.model, r.body)
			}
		}
	}
}

func TestAPIKeyAndCORS(t *testing.T) {
	ts := startServer(t, apiserver.Options{APIKeys: []string{"k1", "k2"}, AllowedOrigins: []string{"http://ui.example"},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) })},
		fakebackend.Options{})
	body := []byte(`{"prompt":"Hi","max_tokens":2}`)
	cases := []struct {
		name, method, path string
		hdr                []string
		status             int
	}{
		{"no key", http.MethodPost, "/v1/completions", nil, 401},
		{"wrong key", http.MethodPost, "/v1/completions", []string{"Authorization", "Bearer nope"}, 401},
		{"not bearer", http.MethodPost, "/v1/completions", []string{"Authorization", "Basic azE6"}, 401},
		{"key 1", http.MethodPost, "/v1/completions", []string{"Authorization", "Bearer k1"}, 200},
		{"key 2", http.MethodPost, "/v1/completions", []string{"Authorization", "Bearer k2"}, 200},
		{"native needs key", http.MethodPost, "/generate", nil, 401},
		{"models need key", http.MethodGet, "/v1/models", nil, 401},
		{"health open", http.MethodGet, "/health", nil, 200},
		{"liveness open", http.MethodGet, "/liveness", nil, 200},
		{"readiness open", http.MethodGet, "/readiness", nil, 200},
		{"metrics open by default", http.MethodGet, "/metrics", nil, 200},
		{"preflight allowed", http.MethodOptions, "/v1/completions",
			[]string{"Origin", "http://ui.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type"}, 204},
		{"preflight other origin", http.MethodOptions, "/v1/completions",
			[]string{"Origin", "http://evil.example", "Access-Control-Request-Method", "POST"}, 403},
		{"plain OPTIONS", http.MethodOptions, "/v1/models", nil, 204},
		{"OPTIONS unknown path", http.MethodOptions, "/nope", nil, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			if tc.method == http.MethodPost {
				b = body
				if tc.path == "/generate" {
					b = []byte(`{"inputs":"Hi"}`)
				}
			}
			r := ts.do(t, tc.method, tc.path, b, tc.hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			switch tc.status {
			case 401:
				e := decode[errResp](t, r.body)
				if e.Error.Code == nil || *e.Error.Code != "invalid_api_key" || r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("401 body %s headers %v", r.body, r.header)
				}
			case 204:
				if !strings.Contains(r.header.Get("Allow"), "OPTIONS") {
					t.Errorf("Allow %q", r.header.Get("Allow"))
				}
			}
			if tc.name == "preflight allowed" {
				h := r.header
				if h.Get("Access-Control-Allow-Origin") != "http://ui.example" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
					h.Get("Access-Control-Allow-Headers") != "authorization, content-type" {
					t.Errorf("preflight headers %v", h)
				}
			}
		})
	}
	r := ts.do(t, http.MethodPost, "/v1/completions", body, "Authorization", "Bearer k1", "Origin", "http://ui.example")
	if r.header.Get("Access-Control-Allow-Origin") != "http://ui.example" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Request-Id") {
		t.Errorf("CORS on a request: %v", r.header)
	}
	r = ts.do(t, http.MethodPost, "/v1/completions", body, "Authorization", "Bearer k1", "Origin", "http://evil.example")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS header for another origin: %v", r.header)
	}

	locked := startServer(t, apiserver.Options{APIKeys: []string{"k"}, MetricsNeedAPIKey: true,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) })},
		fakebackend.Options{})
	if r := locked.get(t, "/metrics"); r.status != 401 {
		t.Errorf("metrics with MetricsNeedAPIKey: %d", r.status)
	}
	if r := locked.do(t, http.MethodGet, "/metrics", nil, "Authorization", "Bearer k"); r.status != 200 {
		t.Errorf("metrics with key: %d", r.status)
	}
}

func TestAccessLog(t *testing.T) {
	var logs lockedBuffer
	tok := storiesTokenizer(t)
	ts := startWithLog(t, apiserver.Options{}, fakebackend.New(tok, fakebackend.Options{}), tok, zerolog.New(&logs))
	ts.post(t, "/v1/completions", `{"prompt":"Once upon a time","max_tokens":3}`, "X-Request-Id", "acc-1")
	ts.get(t, "/health")
	var line string
	waitFor(t, "the access log line", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"request_id":"acc-1"`) && strings.Contains(l, `"message":"request"`) {
				line = l
				return true
			}
		}
		return false
	})
	for _, want := range []string{`"level":"info"`, `"method":"POST"`, `"path":"/v1/completions"`, `"status":200`,
		`"prompt_tokens":5`, `"completion_tokens":3`, `"took":"`} {
		if !strings.Contains(line, want) {
			t.Errorf("access log %s lacks %s", line, want)
		}
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"path":"/health"`) && !strings.Contains(l, `"level":"debug"`) {
			t.Errorf("probe logged above debug: %s", l)
		}
	}
}
