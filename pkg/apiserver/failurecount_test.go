package apiserver_test

import (
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

// failures is how many failures obs was told of, in the two ways
// lightllm_request_failure is fed: an error response, or a completed
// request with a failed sequence.
func (o *observer) failures() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(o.failed)
	for _, d := range o.done {
		if slices.Contains(d.Finish, apiserver.FinishError) {
			n++
		}
	}
	return n
}

// A request whose sequence ends in error is one failure, whether it is
// answered with a 500 (chat, completions), a 200 with finish_reason
// "error" (native) or an error event (streams); a bad request too.
func TestFailedRequestCountedOnce(t *testing.T) {
	tok := storiesTokenizer(t)
	chat := `{"messages":[{"role":"user","content":"Hi"}]`
	cases := map[string]struct {
		path, body string
		status     int
		admitted   bool // RequestDone comes, after the response
	}{
		"chat":          {"/v1/chat/completions", chat + `}`, 500, true},
		"chat stream":   {"/v1/chat/completions", chat + `,"stream":true}`, 200, true},
		"completions":   {"/v1/completions", `{"prompt":"Hi"}`, 500, true},
		"native":        {"/generate", `{"inputs":"Hi"}`, 200, true},
		"native stream": {"/generate_stream", `{"inputs":"Hi"}`, 200, true},
		"bad request":   {"/v1/completions", `{"prompt":"Hi","max_tokens":-1}`, 400, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obs := &observer{}
			ts := startWith(t, apiserver.Options{ChatTemplate: chatML, Observer: obs},
				truncatingBackend{fakebackend.New(tok, fakebackend.Options{})}, tok)
			if r := ts.post(t, tc.path, tc.body); r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			// The run reports RequestDone as the handler returns, which
			// the client may see after the response: wait for it, so a
			// second count could not slip in after the check.
			if tc.admitted {
				waitFor(t, "RequestDone", func() bool {
					obs.mu.Lock()
					defer obs.mu.Unlock()
					return len(obs.done) == 1
				})
			}
			if n := obs.failures(); n != 1 {
				obs.mu.Lock()
				defer obs.mu.Unlock()
				t.Fatalf("%d failures counted, want 1 (error responses %v, done %+v)", n, obs.failed, obs.done)
			}
		})
	}
}
