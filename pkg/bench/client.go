package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// API names the wire format the server speaks.
type API string

// The supported wire formats.
const (
	APICompletions API = "openai-completions" // POST /v1/completions, stream
	APIChat        API = "openai-chat"        // POST /v1/chat/completions, stream
	APILightLLM    API = "lightllm"           // POST /generate_stream (LightLLM native SSE)
)

func (a API) path() string {
	switch a {
	case APIChat:
		return "/v1/chat/completions"
	case APILightLLM:
		return "/generate_stream"
	}
	return "/v1/completions"
}

// Result is the outcome of one request. Times are offsets from the start of
// the run, durations are as measured by the client.
type Result struct {
	Success  bool
	Canceled bool   // cut off by Ctrl-C: neither a success nor a failure
	Err      string // first error, when !Success

	PromptLen int // tokens: the server's count when it reports one
	OutputLen int // tokens: the server's count, else the tokenizer's
	// CachedTokens is the prompt tokens the server served from its prefix
	// cache (usage.prompt_tokens_details.cached_tokens, LightLLM's
	// prompt_cache_len); meaningful only when CachedKnown.
	CachedTokens int
	CachedKnown  bool
	// Turn is the 1-based turn of a multiturn conversation, 0 otherwise.
	Turn int

	Sent    time.Duration   // when the request was sent
	TTFT    time.Duration   // first content chunk - send
	Latency time.Duration   // last content chunk - send (E2EL)
	End     time.Duration   // when the response ended (or failed)
	ITL     []time.Duration // gaps between content chunks after the first
	Chunks  []time.Duration // arrival offsets of content chunks (for the plot)

	serverPrompt bool // PromptLen came from the server
	text         strings.Builder
}

// requester sends single requests; it holds what every request shares.
type requester struct {
	client    *http.Client
	url       string
	api       API
	model     string
	ignoreEOS bool
	tok       Tokenizer
	start     time.Time // run start, the origin of Result offsets
	now       func() time.Time
	// readers are the streams' 64 KB line readers, reused: one allocated
	// (and zeroed) per request was most of the client's allocation and,
	// at hundreds of streams, its page faults.
	readers sync.Pool
}

// streamBuffer is the size of a stream's line reader: a line longer than
// this is copied together (stream).
const streamBuffer = 64 << 10

// reader returns a line reader over body; putReader returns it.
func (q *requester) reader(body io.Reader) *bufio.Reader {
	if br, ok := q.readers.Get().(*bufio.Reader); ok {
		br.Reset(body)
		return br
	}
	return bufio.NewReaderSize(body, streamBuffer)
}

func (q *requester) putReader(br *bufio.Reader) {
	br.Reset(nil) // keep no response body alive
	q.readers.Put(br)
}

func (q *requester) payload(s Sample) ([]byte, error) {
	var body map[string]any
	switch q.api {
	case APILightLLM:
		body = map[string]any{
			"inputs": s.Prompt,
			"parameters": map[string]any{
				"do_sample":      false,
				"ignore_eos":     q.ignoreEOS,
				"max_new_tokens": s.OutputLen,
			},
		}
	case APIChat:
		body = map[string]any{
			"model":          q.model,
			"messages":       []map[string]string{{"role": "user", "content": s.Prompt}},
			"temperature":    0,
			"max_tokens":     s.OutputLen,
			"stream":         true,
			"stream_options": map[string]bool{"include_usage": true},
		}
	default:
		body = map[string]any{
			"model":          q.model,
			"prompt":         s.Prompt,
			"temperature":    0,
			"max_tokens":     s.OutputLen,
			"stream":         true,
			"stream_options": map[string]bool{"include_usage": true},
		}
	}
	switch {
	case s.Schema != nil && q.api == APILightLLM:
		// A constrained answer ends where its JSON does: no ignore_eos.
		params := body["parameters"].(map[string]any)
		params["guided_json"], params["ignore_eos"] = s.Schema, false
	case s.Schema != nil:
		body["response_format"] = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "bench", "schema": s.Schema}}
	case q.ignoreEOS && q.api != APILightLLM:
		body["ignore_eos"] = true // vLLM, SGLang and LightLLM extension
	}
	return json.Marshal(body)
}

// do sends one streaming request and times it.
func (q *requester) do(ctx context.Context, s Sample) *Result {
	r := &Result{PromptLen: s.PromptLen}
	body, err := q.payload(s)
	if err != nil {
		r.Err = fmt.Sprintf("encode request: %v", err)
		return r
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url+q.api.path(), bytes.NewReader(body))
	if err != nil {
		r.Err = fmt.Sprintf("build request: %v", err)
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	sent := q.now()
	r.Sent = sent.Sub(q.start)
	err = q.stream(req, r, sent)
	end := q.now()
	r.End, r.Latency = end.Sub(q.start), end.Sub(sent)
	if err != nil {
		if ctx.Err() != nil {
			r.Canceled = true
		}
		r.Err = err.Error()
		return r
	}
	if len(r.Chunks) == 0 {
		// As vLLM: without a content chunk there is no TTFT to report.
		r.Err = "the stream ended without any content chunk"
		return r
	}
	// E2EL runs to the last content chunk (vLLM's definition), not to a
	// trailing usage chunk or [DONE].
	r.Latency = r.Chunks[len(r.Chunks)-1] - r.Sent
	q.countOutput(r)
	r.Success = true
	return r
}

// streamState is what the parsers track across events.
type streamState struct {
	last          time.Time
	usageOut      int // server's completion token count, -1 if none
	nativeCount   int // LightLLM count_output_tokens of the latest event
	done          bool
	finishFailure string
}

func (q *requester) stream(req *http.Request, r *Result, sent time.Time) error {
	resp, err := q.client.Do(req)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	st := streamState{usageOut: -1, nativeCount: -1}
	br := q.reader(resp.Body)
	defer q.putReader(br)
	var long []byte
	for !st.done {
		// ReadSlice hands out the reader's buffer (line handles a line
		// before the next read and keeps no reference); only a line
		// longer than the buffer is copied together.
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		at := q.now()
		if len(line) > 0 {
			if perr := q.line(bytes.TrimRight(line, "\r\n"), at, sent, r, &st); perr != nil {
				return perr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read stream: %w", err)
		}
	}
	if st.finishFailure != "" {
		return errors.New(st.finishFailure)
	}
	switch {
	case st.usageOut >= 0:
		r.OutputLen = st.usageOut
	case st.nativeCount >= 0:
		r.OutputLen = st.nativeCount
	default:
		r.OutputLen = -1 // counted from the text in finish
	}
	return nil
}

// line handles one SSE line; only "data:" fields carry anything for us.
func (q *requester) line(line []byte, at, sent time.Time, r *Result, st *streamState) error {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil // blank separator, comment, event:/id:/retry: fields
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		st.done = true
		return nil
	}
	var ev event
	if !fastEvent(data, &ev) {
		ev = event{}
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("bad stream event %.120q: %w", data, err)
		}
	}
	if ev.Error != nil {
		return fmt.Errorf("server error in stream: %s", ev.Error.message())
	}
	text, isToken := "", false
	if q.api == APILightLLM {
		if ev.Token != nil && ev.Token.ID != nil {
			// One event per generated token; its text may be "" while a
			// UTF-8 character is incomplete, but it is a token all the same.
			text, isToken = ev.Token.Text, true
			if ev.Token.CountOutput != nil {
				st.nativeCount = *ev.Token.CountOutput
			}
			if ev.Token.PromptTokens != nil {
				r.PromptLen, r.serverPrompt = *ev.Token.PromptTokens, true
			}
			// Not in LightLLM's stream events, but servers that add it
			// (as in /generate's details) report it per token; the
			// prompt's cache hit is fixed, so the largest value wins
			// over a stale early one.
			if c := ev.Token.PromptCacheLen; c != nil && (!r.CachedKnown || *c > r.CachedTokens) {
				r.CachedTokens, r.CachedKnown = *c, true
			}
		}
		if ev.FinishReason != nil && (*ev.FinishReason == "abort" || *ev.FinishReason == "error") {
			st.finishFailure = "server finished the request with reason " + *ev.FinishReason
		}
		if ev.Finished {
			st.done = true
		}
	} else {
		for _, c := range ev.Choices {
			t := c.Text
			if c.Delta != nil {
				t = c.Delta.Content + c.Delta.ReasoningContent + c.Delta.Reasoning
				if len(c.Delta.ToolCalls) > 0 && t == "" {
					isToken = true
				}
			}
			text += t
			if c.FinishReason != nil && (*c.FinishReason == "abort" || *c.FinishReason == "error") {
				st.finishFailure = "server finished the request with reason " + *c.FinishReason
			}
		}
		isToken = isToken || text != ""
		if ev.Usage != nil {
			if ev.Usage.CompletionTokens != nil {
				st.usageOut = *ev.Usage.CompletionTokens
			}
			if ev.Usage.PromptTokens != nil {
				r.PromptLen, r.serverPrompt = *ev.Usage.PromptTokens, true
			}
			if d := ev.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
				r.CachedTokens, r.CachedKnown = *d.CachedTokens, true
			}
		}
	}
	if !isToken {
		return nil
	}
	if len(r.Chunks) == 0 {
		r.TTFT = at.Sub(sent)
	} else {
		r.ITL = append(r.ITL, at.Sub(st.last))
	}
	st.last = at
	r.Chunks = append(r.Chunks, at.Sub(q.start))
	r.text.WriteString(text)
	return nil
}

// countOutput counts output tokens when the server did not report them.
func (q *requester) countOutput(r *Result) {
	if r.OutputLen >= 0 {
		return
	}
	if q.tok != nil {
		r.OutputLen = len(q.tok.Encode(r.text.String(), false))
		return
	}
	r.OutputLen = len(r.Chunks) // one token per chunk, as servers stream
}

// event covers the OpenAI chunk shapes and LightLLM's native event.
type event struct {
	Choices []eventChoice `json:"choices"`
	Usage   *struct {
		PromptTokens        *int `json:"prompt_tokens"`
		CompletionTokens    *int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens *int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Token *struct {
		ID             *int64 `json:"id"`
		Text           string `json:"text"`
		CountOutput    *int   `json:"count_output_tokens"`
		PromptTokens   *int   `json:"prompt_tokens"`
		PromptCacheLen *int   `json:"prompt_cache_len"`
	} `json:"token"`
	Finished     bool       `json:"finished"`
	FinishReason *string    `json:"finish_reason"`
	Error        *errorBody `json:"error"`
}

// eventChoice is one of a chunk's choices: completions' text or chat's delta.
type eventChoice struct {
	Text         string      `json:"text"`
	Delta        *eventDelta `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

type eventDelta struct {
	Content          string            `json:"content"`
	ReasoningContent string            `json:"reasoning_content"`
	Reasoning        string            `json:"reasoning"`
	ToolCalls        []json.RawMessage `json:"tool_calls"`
}

// errorBody accepts {"error": "text"} and {"error": {"message": ...}}.
type errorBody struct{ raw json.RawMessage }

func (e *errorBody) UnmarshalJSON(b []byte) error {
	e.raw = append(json.RawMessage(nil), b...)
	return nil
}

func (e *errorBody) message() string {
	var s string
	if json.Unmarshal(e.raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(e.raw, &o) == nil && o.Message != "" {
		return o.Message
	}
	return string(e.raw)
}
