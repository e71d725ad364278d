package apiserver_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/apitest"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

// TestHostileRequests sends malformed and hostile requests: each gets its
// status and an OpenAI-style error body naming the problem, never a 5xx,
// and the server keeps serving.
func TestHostileRequests(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	cases := apitest.HostileCases()
	if len(cases) < 50 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := ts.do(t, tc.HTTPMethod(), tc.Path, []byte(tc.Body))
			if err := tc.Check(r.status, r.body); err != nil {
				t.Fatal(err)
			}
			if r.status == 405 && r.header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
			if r.header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}
	if n := len(ts.be.Submitted()); n != 0 {
		t.Errorf("%d hostile requests reached the backend", n)
	}
	if r := ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":3}}`); r.status != 200 {
		t.Fatalf("server stopped serving after the hostile requests: %d %s", r.status, r.body)
	}
}

// TestOversizedBodies: bodies past the limit get a clean 413 (the client
// reads the answer, the connection is not reset mid-upload), with and
// without Content-Length.
func TestOversizedBodies(t *testing.T) {
	ts := startServer(t, apiserver.Options{MaxBodyBytes: 1 << 20}, fakebackend.Options{})
	big := append([]byte(`{"inputs":"`), bytes.Repeat([]byte("a"), 3<<20)...)
	big = append(big, `"}`...)
	for name, chunked := range map[string]bool{"content-length": false, "chunked": true} {
		t.Run(name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(big)
			if chunked {
				body = io.MultiReader(bytes.NewReader(big)) // hides the length: chunked encoding
			}
			req, _ := http.NewRequest(http.MethodPost, ts.url+"/generate", body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("dropped connection instead of a 413: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || !strings.Contains(string(b), "request_too_large") {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
		})
	}
	if r := ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2}}`); r.status != 200 {
		t.Fatalf("not serving after 413s: %d %s", r.status, r.body)
	}
}
