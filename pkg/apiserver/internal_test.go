package apiserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// stubBackend is a test double for Backend: it admits everything and
// finishes every sequence at once (the parsers and handlers are what is
// under test here; fakebackend, which imports this package, cannot be used
// from an internal test).
type stubBackend struct{}

func (stubBackend) Submit(_ context.Context, g *Group) (*Stream, error) {
	ch := make(chan Event, g.N)
	for i := 0; i < g.N; i++ {
		ch <- Event{Seq: i, TokenID: 5, Text: "x", CountOutputTokens: 1, Finished: true, Reason: FinishLength, HasLogprob: true}
	}
	close(ch)
	return &Stream{ID: 8, Events: ch}, nil
}
func (stubBackend) Abort(uint64)         {}
func (stubBackend) Ready() bool          { return true }
func (stubBackend) Healthy() bool        { return true }
func (stubBackend) TokenLoad() TokenLoad { return TokenLoad{} }
func (stubBackend) MaxTotalTokens() int  { return 4096 }

var (
	internalTokOnce sync.Once
	internalTok     *tokenizer.Tokenizer
	internalTokErr  error
)

// testServer builds a Server over stories260K's tokenizer (skips when the
// fixture is missing).
func testServer(t testing.TB) *Server {
	t.Helper()
	dir := os.Getenv("LIGHTLLM_TEST_MODELS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "models")
	}
	dir = filepath.Join(dir, "stories260K", "hf")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K tokenizer not found at %s (set LIGHTLLM_TEST_MODELS): %v", dir, err), nil)
	}
	internalTokOnce.Do(func() { internalTok, internalTokErr = tokenizer.LoadDir(dir) })
	if internalTokErr != nil {
		t.Fatal(internalTokErr)
	}
	s, err := New(Options{MaxReqTotalLen: 256, ChatTemplate: "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"},
		stubBackend{}, internalTok, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStopFilter(t *testing.T) {
	cases := map[string]struct {
		stops  []string
		pieces []string
		want   []string // released after each piece, then the flush
	}{
		"no stops":             {nil, []string{"ab", "cd"}, []string{"ab", "cd", ""}},
		"stop inside a piece":  {[]string{"STOP"}, []string{"abSTOPcd"}, []string{"ab", ""}},
		"stop across pieces":   {[]string{"STOP"}, []string{"ab", "ST", "OP", "cd"}, []string{"ab", "", "", "", ""}},
		"false start released": {[]string{"STOP"}, []string{"ab", "ST", "x"}, []string{"ab", "", "STx", ""}},
		"held tail flushed":    {[]string{"STOP"}, []string{"abS", "T"}, []string{"ab", "", "ST"}},
		"earliest of two":      {[]string{"cd", "b"}, []string{"abcd"}, []string{"a", ""}},
		"longest prefix held":  {[]string{"aab"}, []string{"xaa", "ab"}, []string{"x", "a", ""}},
		"multibyte stop":       {[]string{"世界"}, []string{"你好世", "界!"}, []string{"你好", "", ""}},
		"stop at start":        {[]string{"\n\n"}, []string{"\n\nrest"}, []string{"", ""}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newStopFilter(tc.stops)
			var got []string
			for _, p := range tc.pieces {
				got = append(got, f.push(p))
			}
			got = append(got, f.flush())
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("released %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeNumbers(t *testing.T) {
	ints := map[string]struct {
		in   string
		want int64
		code string
	}{
		"plain":          {"42", 42, ""},
		"negative":       {"-7", -7, ""},
		"integral float": {"3.0", 3, ""},
		"exponent":       {"1e3", 1000, ""},
		"fraction":       {"2.5", 0, codeInvalidType},
		"beyond int64":   {"9223372036854775808", 0, codeInvalidValue},
		"1e30":           {"1e30", 0, codeInvalidValue},
		"1e999":          {"1e999", 0, codeInvalidValue},
		"string":         {`"5"`, 0, codeInvalidType},
		"bool":           {"true", 0, codeInvalidType},
		"max int64":      {"9223372036854775807", 9223372036854775807, ""},
	}
	for name, tc := range ints {
		t.Run("int/"+name, func(t *testing.T) {
			v, e := decodeInt([]byte(tc.in), "x")
			switch {
			case tc.code == "" && (e != nil || v != tc.want):
				t.Errorf("got %d %v, want %d", v, e, tc.want)
			case tc.code != "" && (e == nil || e.Code != tc.code || e.Status != 400):
				t.Errorf("got %d %+v, want code %s", v, e, tc.code)
			}
		})
	}
	floats := map[string]struct {
		in   string
		ok   bool
		want float64
	}{
		"plain": {"0.5", true, 0.5}, "int": {"2", true, 2}, "tiny": {"1e-300", true, 1e-300},
		"huge": {"1e400", false, 0}, "string": {`"1"`, false, 0}, "null-ish": {"[1]", false, 0},
	}
	for name, tc := range floats {
		t.Run("float/"+name, func(t *testing.T) {
			v, e := decodeFloat([]byte(tc.in), "x")
			if (e == nil) != tc.ok || (tc.ok && v != tc.want) {
				t.Errorf("got %v %v", v, e)
			}
		})
	}
}

func TestSeqSeed(t *testing.T) {
	cases := []struct {
		seed int64
		i    int
		want int64
	}{{-1, 3, -1}, {0, 0, 0}, {10, 2, 12}, {1<<63 - 1, 1, 0}}
	for _, tc := range cases {
		g := Group{Params: SamplingParams{Params: sampler.Params{Seed: tc.seed}}}
		if got := g.SeqSeed(tc.i); got != tc.want || got < -1 {
			t.Errorf("SeqSeed(seed=%d, %d) = %d, want %d", tc.seed, tc.i, got, tc.want)
		}
	}
}

// checkAccepted asserts what every accepted request must satisfy.
func checkAccepted(t *testing.T, s *Server, g *Group) {
	t.Helper()
	p := &g.Params
	switch {
	case len(g.Prompt) == 0:
		t.Fatal("accepted an empty prompt")
	case g.N < 1 || g.N > MaxBestOf:
		t.Fatalf("accepted n=%d", g.N)
	case p.MaxNewTokens < 1 || len(g.Prompt)+p.MaxNewTokens > s.lengthLimit():
		t.Fatalf("accepted max_new_tokens=%d with a %d-token prompt (limit %d)", p.MaxNewTokens, len(g.Prompt), s.lengthLimit())
	case p.MinNewTokens < 1 || p.MinNewTokens > p.MaxNewTokens:
		t.Fatalf("accepted min_new_tokens=%d (max %d)", p.MinNewTokens, p.MaxNewTokens)
	case p.TopP <= 0 || p.TopP > 1 || p.TopK == 0 || p.TopK < -1 || p.Temperature <= 0 || p.RepetitionPenalty < 1:
		t.Fatalf("accepted out-of-range sampling params %+v", p)
	case len(p.StopSequences) > maxStopSequences:
		t.Fatalf("accepted %d stop sequences", len(p.StopSequences))
	}
	for _, id := range g.Prompt {
		if id < 0 || int(id) >= s.vocab {
			t.Fatalf("accepted token id %d", id)
		}
	}
}

func checkRejected(t *testing.T, e *apiError) {
	t.Helper()
	if e.Status < 400 || e.Status > 499 || e.Message == "" || e.Type == "" || e.Code == "" {
		t.Fatalf("rejection is not a complete 4xx: %+v", e)
	}
}

func FuzzNativeBody(f *testing.F) {
	s := testServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := s.parseNative(body)
		if e != nil {
			checkRejected(t, e)
			return
		}
		checkAccepted(t, s, &req.group)
	})
}

func FuzzCompletionBody(f *testing.F) {
	s := testServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := s.parseCompletion(body)
		if e != nil {
			checkRejected(t, e)
			return
		}
		if len(req.prompts) == 0 || len(req.prompts) != len(req.groupParams) || req.bestOf < req.n {
			t.Fatalf("inconsistent request: %d prompts, %d params, n=%d best_of=%d", len(req.prompts), len(req.groupParams), req.n, req.bestOf)
		}
		for i := range req.prompts {
			checkAccepted(t, s, &Group{Prompt: req.prompts[i], N: req.bestOf, Params: req.groupParams[i]})
		}
	})
}

func FuzzChatBody(f *testing.F) {
	s := testServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := s.parseChat(body)
		if e != nil {
			checkRejected(t, e)
			return
		}
		checkAccepted(t, s, &Group{Prompt: req.prompt, N: req.n, Params: req.params})
	})
}
