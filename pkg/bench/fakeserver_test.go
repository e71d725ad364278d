package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is a test double of an inference server: OpenAI completions
// and chat streams and LightLLM's /generate_stream, with scripted delays.
// It records, with its own clock, when each request arrived and when each
// token was flushed, so the client's measurements can be checked against
// independent timings.
type fakeServer struct {
	*httptest.Server
	ttft, itl   time.Duration // before the first token, between tokens
	noUsage     bool          // omit the usage chunk
	roleChunk   bool          // chat: send the role-only chunk at once
	failEvery   int           // every n-th request (1-based) answers HTTP 500
	streamError int           // this request (1-based) fails mid-stream
	promptCount int           // prompt_tokens the server reports
	// prefixCache makes the double count prompt tokens as words and report
	// a prefix cache's hit: the longest word prefix shared with an earlier
	// prompt + answer (all but the last prompt word, as a radix cache).
	prefixCache bool
	maxModelLen int  // listed on /v1/models when > 0
	metrics     bool // serve /metrics with the prefix-cache counters

	cachedTotal, promptTotal int // what /metrics exports

	mu      sync.Mutex
	n       int
	times   []serverTiming
	prompts []string // in arrival order
	history [][]string
}

type serverTiming struct {
	arrived time.Time
	tokens  []time.Time
}

// serverTTFT is the server-side delay from arrival to the first flush.
func (t serverTiming) serverTTFT() time.Duration { return t.tokens[0].Sub(t.arrived) }

func newFakeServer(t *testing.T, ttft, itl time.Duration) *fakeServer {
	f := &fakeServer{ttft: ttft, itl: itl, promptCount: 7}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		if f.maxModelLen > 0 {
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"fake-model","object":"model","max_model_len":%d}]}`, f.maxModelLen)
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		if !f.metrics {
			http.NotFound(w, nil)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		// Two label sets, as a histogram per model name: the client sums them.
		fmt.Fprintf(w, "# TYPE lightllm_cache_length histogram\nlightllm_cache_length_bucket{le=\"+Inf\",model_name=\"a\"} 1\n"+
			"lightllm_cache_length_sum{model_name=\"a\"} %d\nlightllm_cache_length_sum{model_name=\"b\"} 0\n"+
			"lightllm_prompt_tokens_total{model_name=\"a\"} %d\n", f.cachedTotal, f.promptTotal)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) { f.serve(t, w, r, APICompletions) })
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { f.serve(t, w, r, APIChat) })
	mux.HandleFunc("/generate_stream", func(w http.ResponseWriter, r *http.Request) { f.serve(t, w, r, APILightLLM) })
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) timings() []serverTiming {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]serverTiming(nil), f.times...)
}

func (f *fakeServer) serve(t *testing.T, w http.ResponseWriter, r *http.Request, api API) {
	arrived := time.Now()
	f.mu.Lock()
	f.n++
	seq := f.n
	f.mu.Unlock()
	var req struct {
		Model      string            `json:"model"`
		Prompt     string            `json:"prompt"`
		Messages   []json.RawMessage `json:"messages"`
		MaxTokens  int               `json:"max_tokens"`
		Stream     bool              `json:"stream"`
		Inputs     string            `json:"inputs"`
		Parameters struct {
			MaxNewTokens int  `json:"max_new_tokens"`
			IgnoreEOS    bool `json:"ignore_eos"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	n := req.MaxTokens
	prompt := req.Prompt
	if api == APILightLLM {
		n = req.Parameters.MaxNewTokens
		prompt = req.Inputs
	}
	promptCount, cached := f.promptCount, -1
	f.mu.Lock()
	f.prompts = append(f.prompts, prompt)
	if f.prefixCache {
		words := strings.Fields(prompt)
		promptCount, cached = len(words), 0
		for _, h := range f.history {
			k := 0
			for k < len(h) && k < len(words)-1 && h[k] == words[k] {
				k++
			}
			cached = max(cached, k)
		}
		for i := range n {
			words = append(words, fmt.Sprintf("t%d", i))
		}
		f.history = append(f.history, words)
		f.cachedTotal += cached
	}
	f.promptTotal += promptCount
	f.mu.Unlock()
	if api != APILightLLM && (req.Model != "fake-model" || !req.Stream) {
		http.Error(w, `{"error":{"message":"wrong model or not streaming"}}`, http.StatusBadRequest)
		return
	}
	if f.failEvery > 0 && seq%f.failEvery == 0 {
		http.Error(w, `{"error":{"message":"scripted failure"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	send := func(prefix string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "%s%s\n\n", prefix, b)
		fl.Flush()
	}
	if api == APIChat && f.roleChunk {
		send("data: ", map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}}}})
	}
	timing := serverTiming{arrived: arrived}
	for i := range n {
		d := f.itl
		if i == 0 {
			d = f.ttft
		}
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		if f.streamError == seq && i == 1 {
			send("data: ", map[string]any{"error": map[string]any{"message": "scripted stream failure"}})
			return
		}
		text := fmt.Sprintf(" t%d", i)
		switch api {
		case APILightLLM:
			if i == 2 {
				text = "" // an incomplete UTF-8 character: still one token event
			}
			tok := map[string]any{"id": 100 + i, "text": text, "logprob": -0.5, "special": false,
				"count_output_tokens": i + 1, "prompt_tokens": promptCount}
			if cached >= 0 {
				tok["prompt_cache_len"] = cached
			}
			send("data:", map[string]any{
				"token": tok, "generated_text": nil, "finished": i == n-1, "finish_reason": finishReason(i, n), "details": nil,
			})
		case APIChat:
			send("data: ", map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": finishReason(i, n)}}})
		default:
			send("data: ", map[string]any{"choices": []any{map[string]any{"index": 0, "text": text, "finish_reason": finishReason(i, n)}}})
		}
		timing.tokens = append(timing.tokens, time.Now())
	}
	if api != APILightLLM {
		if !f.noUsage {
			usage := map[string]any{"prompt_tokens": promptCount, "completion_tokens": n, "total_tokens": promptCount + n}
			if cached >= 0 {
				usage["prompt_tokens_details"] = map[string]any{"cached_tokens": cached}
			}
			send("data: ", map[string]any{"choices": []any{}, "usage": usage})
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}
	f.mu.Lock()
	f.times = append(f.times, timing)
	f.mu.Unlock()
}

func finishReason(i, n int) any {
	if i == n-1 {
		return "length"
	}
	return nil
}

// wordTok is a test double tokenizer: one token per space-separated word,
// id 0 is the special "<s>" (added as BOS when addSpecial).
type wordTok struct {
	mu    sync.Mutex
	ids   map[string]int32
	words []string
}

func newWordTok(vocab int) *wordTok {
	t := &wordTok{ids: map[string]int32{}}
	t.words = append(t.words, "<s>")
	for i := 1; i < vocab; i++ {
		t.words = append(t.words, fmt.Sprintf("w%d", i))
	}
	for i, w := range t.words {
		t.ids[w] = int32(i)
	}
	return t
}

func (t *wordTok) Encode(text string, addSpecial bool) []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int32
	if addSpecial {
		out = append(out, 0)
	}
	for _, w := range strings.Fields(text) {
		id, ok := t.ids[w]
		if !ok {
			id = int32(len(t.words))
			t.ids[w] = id
			t.words = append(t.words, w)
		}
		out = append(out, id)
	}
	return out
}

func (t *wordTok) Decode(ids []int32, _ bool) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.words) {
			parts = append(parts, t.words[id])
		}
	}
	return strings.Join(parts, " ")
}

func (t *wordTok) VocabSize() int          { return 1000 }
func (t *wordTok) IsSpecial(id int32) bool { return id == 0 }
