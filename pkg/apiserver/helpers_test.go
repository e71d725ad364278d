package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// chatML is a small ChatML template for tests (stories260K ships none).
const chatML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
	"{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"

// strictTemplate raises on a conversation that does not start with a user
// or system turn, like real templates' role checks.
const strictTemplate = "{% if messages[0].role not in ['user', 'system'] %}" +
	"{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" + chatML

// modelsDir finds ../shared/models from the repository root, or
// LIGHTLLM_TEST_MODELS.
func modelsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("LIGHTLLM_TEST_MODELS"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "models")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

var (
	tokOnce sync.Once
	tokVal  *tokenizer.Tokenizer
	tokErr  error
)

// storiesTokenizer loads stories260K's HF tokenizer (SentencePiece BPE with
// byte fallback, vocab 512), skipping the test when the fixture is absent.
func storiesTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	dir := filepath.Join(modelsDir(t), "stories260K", "hf")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K tokenizer not found at %s (set LIGHTLLM_TEST_MODELS): %v", dir, err), nil)
	}
	tokOnce.Do(func() { tokVal, tokErr = tokenizer.LoadDir(dir) })
	if tokErr != nil {
		t.Fatalf("load tokenizer: %v", tokErr)
	}
	return tokVal
}

type testServer struct {
	url string
	srv *apiserver.Server
	be  *fakebackend.Backend
	tok *tokenizer.Tokenizer
}

// startServer runs a Server over the fake backend on a free loopback port.
func startServer(t testing.TB, opts apiserver.Options, bopts fakebackend.Options) *testServer {
	t.Helper()
	tok := storiesTokenizer(t)
	be := fakebackend.New(tok, bopts)
	return startWith(t, opts, be, tok)
}

func startWith(t testing.TB, opts apiserver.Options, be apiserver.Backend, tok *tokenizer.Tokenizer) *testServer {
	t.Helper()
	return startWithLog(t, opts, be, tok, zerolog.Nop())
}

// startWithLog is startWith with the server logging to log.
func startWithLog(t testing.TB, opts apiserver.Options, be apiserver.Backend, tok *tokenizer.Tokenizer, log zerolog.Logger) *testServer {
	t.Helper()
	if opts.MaxReqTotalLen == 0 {
		opts.MaxReqTotalLen = 512
	}
	if opts.ModelDir == "" {
		opts.ModelDir = "/models/stories260K/"
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Unix(1700000000, 0) }
	}
	srv, err := apiserver.New(opts, be, tok, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	ts := &testServer{url: "http://" + l.Addr().String(), srv: srv, tok: tok}
	if fb, ok := be.(*fakebackend.Backend); ok {
		ts.be = fb
	}
	return ts
}

type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server asked to close the connection
}

func (ts *testServer) do(t testing.TB, method, path string, body []byte, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
}

func (ts *testServer) post(t testing.TB, path, body string, hdr ...string) response {
	t.Helper()
	return ts.do(t, http.MethodPost, path, []byte(body), hdr...)
}

func (ts *testServer) get(t testing.TB, path string) response {
	t.Helper()
	return ts.do(t, http.MethodGet, path, nil)
}

// decode unmarshals a response body, failing the test on bad JSON.
func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("response is not the expected JSON: %v\n%s", err, b)
	}
	return v
}

type errResp struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// sseEvents splits an SSE body into its data payloads, checking framing:
// every event is prefix + payload + "\n\n" and nothing else.
func sseEvents(t testing.TB, body []byte, prefix string) []string {
	t.Helper()
	if len(body) == 0 {
		t.Fatal("empty SSE body")
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("SSE body does not end with a blank line: %q", tail(body))
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if !strings.HasPrefix(ev, prefix) || strings.Contains(ev, "\n") {
			t.Fatalf("bad SSE event framing (want %q + one line): %q", prefix, ev)
		}
		out = append(out, strings.TrimPrefix(ev, prefix))
	}
	return out
}

func tail(b []byte) []byte {
	if len(b) > 200 {
		return b[len(b)-200:]
	}
	return b
}

// streamLines reads an SSE response incrementally, handing each data
// payload to fn until fn returns false.
func streamLines(t testing.TB, r io.Reader, fn func(string) bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data:") {
			if !fn(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")) {
				return
			}
		}
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func nopLogger() zerolog.Logger { return zerolog.Nop() }

func listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
