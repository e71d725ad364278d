package bench

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseMultiTurn(t *testing.T) {
	for _, tc := range []struct {
		in      string
		turns   int
		ok, err bool
	}{
		{"multiturn", DefaultTurns, true, false},
		{"multiturn:3", 3, true, false},
		{"multiturn:1", 1, true, false},
		{"multiturn:0", 0, true, true},
		{"multiturn:x", 0, true, true},
		{"multiturn:65", 0, true, true},
		{"multiturns", 0, false, false},
		{"random", 0, false, false},
		{"sharegpt:multiturn.json", 0, false, false},
	} {
		turns, ok, err := ParseMultiTurn(tc.in)
		if turns != tc.turns || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("ParseMultiTurn(%q) = %d, %v, %v; want %d, %v, error %v", tc.in, turns, ok, err, tc.turns, tc.ok, tc.err)
		}
	}
}

func TestMultiTurnConversations(t *testing.T) {
	tok := newWordTok(1000)
	convs, err := MultiTurnConversations(tok, 3, 4, 10, 3, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, c := range convs {
		if len(c.Users) != 4 || len(c.UserLens) != 4 || c.OutputLen != 5 {
			t.Fatalf("conversation %d: %+v", i, c)
		}
		for k, u := range c.Users {
			want := 3
			if k == 0 {
				want = 10
			}
			if n := len(tok.Encode(u, false)); n != want || c.UserLens[k] != want {
				t.Fatalf("conversation %d turn %d: %d tokens (recorded %d), want %d", i, k+1, n, c.UserLens[k], want)
			}
			if seen[u] {
				t.Fatalf("user text %q repeats", u)
			}
			seen[u] = true
		}
	}
	if _, err := MultiTurnConversations(tok, 0, 2, 10, 3, 5, 7); err == nil {
		t.Fatal("zero conversations accepted")
	}
	if _, err := MultiTurnConversations(nil, 1, 2, 10, 3, 5, 7); err == nil {
		t.Fatal("no tokenizer accepted")
	}
}

// TestRunMultiTurn: every turn's prompt is the previous prompt, the answer
// streamed back and the new user text; the server's cache counts are read
// from both wire formats and summed per turn.
func TestRunMultiTurn(t *testing.T) {
	const turns, out = 3, 4
	for _, api := range []API{APICompletions, APILightLLM} {
		t.Run(string(api), func(t *testing.T) {
			srv := newFakeServer(t, 5*time.Millisecond, time.Millisecond)
			srv.prefixCache = true
			tok := newWordTok(1000)
			convs, err := MultiTurnConversations(tok, 2, turns, 6, 2, out, 1)
			if err != nil {
				t.Fatal(err)
			}
			// One conversation at a time, so the server sees them in order.
			cfg := Config{URL: srv.URL, API: api, RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: 1, Tokenizer: tok}
			rep, err := RunMultiTurn(context.Background(), cfg, convs)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Metrics.Completed != 2*turns || rep.NumPrompts != 2*turns || len(rep.Turns) != turns {
				t.Fatalf("completed %d of %d, %d turn rows (%s)", rep.Metrics.Completed, rep.NumPrompts, len(rep.Turns), rep.Metrics.FirstError)
			}
			srv.mu.Lock()
			prompts := append([]string(nil), srv.prompts...)
			srv.mu.Unlock()
			answer := " t0 t1 t2 t3"
			if api == APILightLLM {
				answer = " t0 t1 t3" // the double's third token has empty text
			}
			for c := range convs {
				want := ""
				for k := range turns {
					want += convs[c].Users[k]
					if got := prompts[c*turns+k]; got != want {
						t.Fatalf("conversation %d turn %d prompt %q, want %q", c, k+1, got, want)
					}
					r := rep.Results[c*turns+k]
					if r.Turn != k+1 || !r.CachedKnown || r.PromptLen != len(strings.Fields(want)) {
						t.Fatalf("conversation %d turn %d: %+v", c, k+1, r)
					}
					want += answer
				}
			}
			// Turn 1 hits nothing (the conversations share no prefix);
			// turn k+1 hits turn k's prompt and answer, up to the word the
			// double's native stream left out.
			hit := func(k int) int {
				p := len(strings.Fields(prompts[k-1]))
				if api == APILightLLM {
					return p + 2
				}
				return p + out
			}
			for k, tr := range rep.Turns {
				wantCached := 0
				if k > 0 {
					wantCached = hit(k) + hit(turns+k)
				}
				if tr.Turn != k+1 || tr.Completed != 2 || !tr.CachedKnown || tr.CachedTokens != wantCached ||
					tr.PrefillTokens != tr.PromptTokens-tr.CachedTokens || tr.TTFT.N != 2 {
					t.Fatalf("turn %d: %+v, want cached %d", k+1, tr, wantCached)
				}
			}
			if m := rep.Metrics; !m.ServerCacheCounts || m.TotalCached != rep.Turns[1].CachedTokens+rep.Turns[2].CachedTokens {
				t.Fatalf("total cached %d (%v)", m.TotalCached, m.ServerCacheCounts)
			}
			var b strings.Builder
			if err := rep.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"Multi-turn (totals per turn)", "Cached input tokens (server count):"} {
				if !strings.Contains(b.String(), s) {
					t.Fatalf("table lacks %q:\n%s", s, b.String())
				}
			}
			path := filepath.Join(t.TempDir(), "mt.json")
			if err := rep.WriteJSON(path); err != nil {
				t.Fatal(err)
			}
			var j struct {
				Turns []struct {
					Turn         int  `json:"turn"`
					CachedTokens *int `json:"cached_tokens"`
				} `json:"turns"`
				CachedLens []*int `json:"cached_lens"`
				TurnOf     []int  `json:"turn_of_request"`
			}
			data, _ := os.ReadFile(path)
			if err := json.Unmarshal(data, &j); err != nil {
				t.Fatal(err)
			}
			if len(j.Turns) != turns || j.Turns[1].CachedTokens == nil || *j.Turns[1].CachedTokens != rep.Turns[1].CachedTokens ||
				len(j.CachedLens) != 2*turns || len(j.TurnOf) != 2*turns || j.TurnOf[turns+1] != 2 {
				t.Fatalf("json: %s", data)
			}
		})
	}
}

// TestRunMultiTurnFailureEndsConversation: a failed turn is counted once and
// its conversation's later turns are not sent (there is no answer to extend).
func TestRunMultiTurnFailureEndsConversation(t *testing.T) {
	srv := newFakeServer(t, time.Millisecond, time.Millisecond)
	srv.failEvery = 2 // the second request: conversation 0, turn 2
	tok := newWordTok(1000)
	convs, err := MultiTurnConversations(tok, 2, 3, 4, 2, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{URL: srv.URL, API: APICompletions, RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: 1, Tokenizer: tok}
	rep, err := RunMultiTurn(context.Background(), cfg, convs)
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	// Conversation 0: turn 1 ok, turn 2 fails, turn 3 not sent. Conversation
	// 1 (requests 3-5 of the server; the 4th fails): turn 1 ok, turn 2 fails.
	if m.Completed != 2 || m.Failed != 2 || rep.Results[2] != nil || rep.Results[5] != nil {
		t.Fatalf("completed %d failed %d, results %v", m.Completed, m.Failed, rep.Results)
	}
	if m.ServerCacheCounts || rep.Turns[0].CachedKnown {
		t.Fatal("cache counts reported by a server that sent none")
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Not sent (an earlier turn failed):") || !strings.Contains(b.String(), "n/a") {
		t.Fatalf("table:\n%s", b.String())
	}
}
