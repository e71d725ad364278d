package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The API tests (issue 5) drive a launched server over HTTP: helpers for
// JSON requests, SSE streams and llama.cpp's golden run.

// apiGolden is llama.cpp's greedy run of stories260K from BOS alone.
type apiGolden struct {
	Tokens []int32 `json:"generated_tokens"`
	// StopIndex is where the model emits id 1, which ends its story.
	StopIndex int    `json:"first_bos_or_eos_index"`
	Text      string `json:"text_until_stop"`
	// Once are the ids of "Once upon a time" without BOS.
	Once []int32 `json:"prompt_once_upon_a_time_tokens"`
}

func loadAPIGolden(t *testing.T, models string) apiGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(models, "stories260K", "golden_greedy_llamacpp.json"))
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("golden file: %v", err), nil)
	}
	var g apiGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.StopIndex <= 0 || g.StopIndex >= len(g.Tokens) || g.Tokens[g.StopIndex] != 1 || len(g.Once) != 4 ||
		!strings.HasPrefix(g.Text, "Once upon a time") {
		t.Fatalf("golden file is not what these tests expect: stop index %d, once %v", g.StopIndex, g.Once)
	}
	return g
}

// apiClient talks to one server.
type apiClient struct {
	t      *testing.T
	base   string
	ctx    context.Context
	header map[string]string // sent with every request (e.g. Authorization)
}

func newAPIClient(t *testing.T, base string) *apiClient {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return &apiClient{t: t, base: base, ctx: ctx}
}

// apiAnswer is one HTTP answer.
type apiAnswer struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; body is a string or []byte as is, anything else as JSON.
func (c *apiClient) do(t *testing.T, method, path string, body any) apiAnswer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(c.ctx, method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return apiAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// postJSON sends body and decodes a 200 answer into out.
func (c *apiClient) postJSON(t *testing.T, path string, body, out any) {
	t.Helper()
	a := c.do(t, http.MethodPost, path, body)
	if a.status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, a.status, a.body)
	}
	if err := json.Unmarshal(a.body, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, a.body)
	}
}

// sse posts body and returns the payload of every event, in order, as
// written: the raw line after "data:" (so a test can check the framing).
func (c *apiClient) sse(t *testing.T, path string, body any) (events []string, header http.Header) {
	t.Helper()
	return c.slowSSE(t, path, body, 0)
}

// slowSSE is sse with a client that waits before it reads the stream.
func (c *apiClient) slowSSE(t *testing.T, path string, body any, wait time.Duration) (events []string, header http.Header) {
	t.Helper()
	j, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.base+path, bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("POST %s: Content-Type %q", path, ct)
	}
	time.Sleep(wait)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	blank := true // events are separated by one empty line
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			blank = true
			continue
		}
		data, ok := strings.CutPrefix(line, "data:")
		if !ok || !blank {
			t.Fatalf("POST %s: bad SSE framing at %q", path, line)
		}
		blank = false
		events = append(events, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return events, resp.Header
}

// apiOpenAIEvents strips the OpenAI framing ("data: " + JSON, then
// "data: [DONE]" last) and decodes each chunk with decode.
func apiOpenAIEvents(t *testing.T, raw []string, decode func(payload string)) {
	t.Helper()
	if len(raw) == 0 || raw[len(raw)-1] != " [DONE]" {
		t.Fatalf("stream does not end with data: [DONE]: %q", raw)
	}
	for _, r := range raw[:len(raw)-1] {
		payload, ok := strings.CutPrefix(r, " ")
		if !ok {
			t.Fatalf("OpenAI event without the space after data: %q", r)
		}
		decode(payload)
	}
}

func apiJSON(t *testing.T, s string, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
}
