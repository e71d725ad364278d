package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver/apitest"
)

type apiHostile = apitest.HostileCase

// testHostile sends pkg/apiserver's table of malformed and hostile requests
// (the one its unit tests send to the fake backend) to the real server,
// plus what only a real server shows: oversized bodies, bodies cut short,
// clients that vanish mid-stream. Every answer is checked; afterwards no
// request slot is left in use and greedy generation is still exact.
func testHostile(t *testing.T, c *apiClient, s *server, gold apiGolden) {
	cases := apitest.HostileCases()
	// A body over the 16 MiB limit is refused with 413 and the client gets
	// the answer (the rest of the body is drained, not reset).
	big := `{"inputs":"` + strings.Repeat("a", 17<<20) + `"}`
	cases = append(cases,
		apiHostile{Name: "e2e/17 MiB body", Path: "/generate", Body: big, Status: 413, Code: "request_too_large"},
		apiHostile{Name: "e2e/17 MiB chat body", Path: "/v1/chat/completions", Body: big, Status: 413, Code: "request_too_large"},
		apiHostile{Name: "e2e/prompt of 600 ids", Path: "/v1/completions", Body: `{"prompt":[` + strings.TrimSuffix(strings.Repeat("7,", 600), ",") + `]}`,
			Status: 400, Code: "context_length_exceeded"},
		apiHostile{Name: "e2e/max_tokens 2^63", Path: "/v1/completions", Body: `{"prompt":"Hi","max_tokens":9223372036854775808}`,
			Status: 400, Code: "invalid_value", Param: "max_tokens"},
		apiHostile{Name: "e2e/negative n", Path: "/v1/completions", Body: `{"prompt":"Hi","n":-1}`, Status: 400, Code: "invalid_value", Param: "n"},
		apiHostile{Name: "e2e/top_p NaN string", Path: "/generate", Body: `{"inputs":"Hi","parameters":{"top_p":"NaN"}}`,
			Status: 400, Code: "invalid_type", Param: "parameters.top_p"},
		apiHostile{Name: "e2e/chat empty content parts", Path: "/v1/chat/completions", Body: `{"messages":[{"role":"user","content":[]}]}`, Status: 400},
		apiHostile{Name: "e2e/overlong utf-8", Path: "/v1/completions", Body: "{\"prompt\":\"\xc0\xaf\"}", Status: 400, Code: "invalid_encoding"},
		apiHostile{Name: "e2e/stream as string", Path: "/v1/completions", Body: `{"prompt":"Hi","stream":"yes"}`,
			Status: 400, Code: "invalid_type", Param: "stream"},
		apiHostile{Name: "e2e/HEAD generate", Method: http.MethodHead, Path: "/generate", Status: 405},
	)
	if len(cases) < 50 {
		t.Fatalf("only %d hostile requests", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			a := c.do(t, tc.HTTPMethod(), tc.Path, tc.Body)
			if tc.HTTPMethod() == http.MethodHead {
				if a.status != tc.Status || len(a.body) != 0 {
					t.Fatalf("HEAD: %d with %d body bytes", a.status, len(a.body))
				}
				return
			}
			if err := tc.Check(a.status, a.body); err != nil {
				t.Fatal(err)
			}
			if a.header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}

	t.Run("e2e/body cut short", func(t *testing.T) {
		// Content-Length promises more than is sent, then the client closes.
		conn := apiDial(t, s.base)
		body := `{"inputs":"Once upon`
		_, err := io.WriteString(conn, "POST /generate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"+body)
		if err != nil {
			t.Fatal(err)
		}
		conn.(interface{ CloseWrite() error }).CloseWrite()
		defer conn.Close()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a truncated body: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := (apiHostile{Status: 400, Code: "invalid_json"}).Check(resp.StatusCode, b); err != nil {
			t.Fatalf("truncated body: %v", err)
		}
	})

	t.Run("e2e/clients vanish mid-stream", func(t *testing.T) {
		// Ten streams dropped after their first event: each is aborted and
		// its slot and KV freed.
		for i := range 10 {
			path, body := "/generate_stream", `{"inputs":"Once upon a time","parameters":{"max_new_tokens":400,"ignore_eos":true}}`
			if i%2 == 1 {
				path, body = "/v1/completions", `{"prompt":"Once upon a time","max_tokens":400,"ignore_eos":true,"stream":true}`
			}
			ctx, cancel := context.WithCancel(c.ctx)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatalf("first event: %v", err)
			}
			cancel()
			resp.Body.Close()
		}
		apiWaitIdle(t, s, 10*time.Second)
	})

	// Still serving, and still exact.
	var a apiNativeAnswer
	c.postJSON(t, "/generate", map[string]any{"inputs": "", "parameters": apiNativeParams(nil)}, &a)
	if a.GeneratedText[0] != gold.Text {
		t.Fatalf("after the hostile requests /generate gives %q", a.GeneratedText[0])
	}
	if st := c.do(t, http.MethodGet, "/health", nil); st.status != 200 {
		t.Fatalf("/health %d after the hostile requests", st.status)
	}
	apiWaitIdle(t, s, 5*time.Second)
}

// apiWaitIdle waits until no request slot is in use and no KV is held beyond
// the prompt cache.
func apiWaitIdle(t *testing.T, s *server, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		slots, kv, ok := slotsInUse(s.shmDir)
		if ok && slots == 0 && kv == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d slots in use, %d KV tokens held (ok=%v)", d, slots, kv, ok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testInfo(t *testing.T, c *apiClient) {
	get := func(path string) apiAnswer {
		a := c.do(t, http.MethodGet, path, nil)
		if a.status != 200 {
			t.Fatalf("GET %s: %d %s", path, a.status, a.body)
		}
		return a
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(get("/v1/models").body, &models); err != nil || models.Object != "list" || len(models.Data) != 1 ||
		models.Data[0].ID != "hf" || models.Data[0].Object != "model" || models.Data[0].MaxModelLen != 512 {
		t.Errorf("/v1/models: %+v (%v)", models, err)
	}
	for _, p := range []string{"/health", "/healthz"} {
		if a := get(p); string(bytes.TrimSpace(a.body)) != `{"message":"Ok"}` {
			t.Errorf("GET %s: %s", p, a.body)
		}
		if a := c.do(t, http.MethodHead, p, nil); a.status != 200 || len(a.body) != 0 {
			t.Errorf("HEAD %s: %d %q", p, a.status, a.body)
		}
	}
	for _, p := range []string{"/liveness", "/readiness"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if a := c.do(t, m, p, nil); a.status != 200 || !strings.Contains(string(a.body), `"ok"`) {
				t.Errorf("%s %s: %d %s", m, p, a.status, a.body)
			}
		}
	}
	var tl map[string]any
	if err := json.Unmarshal(get("/token_load").body, &tl); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"current_load", "logical_max_load", "dynamic_max_load"} {
		if v, ok := tl[k].(float64); !ok || v < 0 || v > 1 {
			t.Errorf("/token_load %s = %v", k, tl[k])
		}
	}
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"text":"Once upon a time"}`, 5},
		{`{"text":"Once upon a time","parameters":{"add_special_tokens":false}}`, 4},
		{`{"text":""}`, 1},
	} {
		var n struct {
			N int `json:"ntokens"`
		}
		c.postJSON(t, "/tokens", tc.body, &n)
		if n.N != tc.want {
			t.Errorf("/tokens %s: %d, want %d", tc.body, n.N, tc.want)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		a := c.do(t, m, "/get_model_name", nil)
		var mn struct {
			Name string `json:"model_name"`
		}
		if err := json.Unmarshal(a.body, &mn); a.status != 200 || err != nil || mn.Name == "" {
			t.Errorf("%s /get_model_name: %d %s", m, a.status, a.body)
		}
	}
	var info map[string]any
	if err := json.Unmarshal(get("/get_server_info").body, &info); err != nil || info["max_req_total_len"] != 512.0 ||
		!strings.HasSuffix(info["model_dir"].(string), "stories260K/hf") {
		t.Errorf("/get_server_info: %v (%v)", info, err)
	}
	// /metrics: the metric role's counters, fed by the requests above
	// (they arrive asynchronously).
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := get("/metrics")
		n := apiMetricValue(string(a.body), "lightllm_request_success_total")
		if strings.Contains(string(a.body), "lightllm_batch_inference_count_total") && n >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: lightllm_request_success_total %v after the requests above:\n%.2000s", n, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// apiMetricValue sums a Prometheus metric's samples in a text exposition.
func apiMetricValue(text, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}
