package bench

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A stream's line reader is reused by the next request: nothing of the
// previous stream (bytes left after its [DONE], a line longer than the
// buffer, a stream cut off mid-line) shows in the next one's result.
func TestStreamReaderReuse(t *testing.T) {
	chunk := func(text string) string {
		return `data: {"choices":[{"index":0,"text":"` + text + `","finish_reason":null}]}` + "\n\n"
	}
	done := `data: {"choices":[{"index":0,"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n"
	long := strings.Repeat("x", streamBuffer+100)
	cases := []struct {
		name  string
		first string // the previous stream's body
	}{
		{"bytes after [DONE]", chunk("a") + chunk("b") + done + chunk("stale")},
		{"a line longer than the buffer", chunk(long) + chunk("b") + done},
		{"cut off mid-line", chunk("a") + `data: {"choices":[{"index":0,"te`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bodies := []string{c.first, chunk("p") + chunk("q") + done}
			// The request counter is taken before the body is written: the
			// client can read a whole body and send its next request before
			// the handler that wrote it returns.
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				i := int(n.Add(1)) - 1
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(bodies[min(i, len(bodies)-1)]))
			}))
			defer srv.Close()
			q := &requester{client: srv.Client(), url: srv.URL, api: APICompletions, model: "m", start: time.Now(), now: time.Now}
			q.do(t.Context(), Sample{Prompt: "x", OutputLen: 2})
			r := q.do(t.Context(), Sample{Prompt: "x", OutputLen: 2})
			if !r.Success || r.text.String() != "pq" || r.OutputLen != 2 || len(r.Chunks) != 2 {
				t.Fatalf("second stream: success %v (%s), text %q, output %d, chunks %d", r.Success, r.Err, r.text.String(), r.OutputLen, len(r.Chunks))
			}
		})
	}
}
