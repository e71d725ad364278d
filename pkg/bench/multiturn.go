package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultTurns is the number of turns of `--dataset multiturn` without ":N".
const DefaultTurns = 2

// maxTurns bounds ":N": each turn's prompt holds every earlier one, so
// prompts grow quadratically in the text sent.
const maxTurns = 64

// ParseMultiTurn recognises "multiturn" and "multiturn:N" and returns the
// number of turns; ok is false for any other dataset name.
func ParseMultiTurn(dataset string) (turns int, ok bool, err error) {
	rest, found := strings.CutPrefix(dataset, "multiturn")
	if !found || (rest != "" && rest[0] != ':') {
		return 0, false, nil
	}
	if rest == "" {
		return DefaultTurns, true, nil
	}
	n, err := strconv.Atoi(rest[1:])
	if err != nil || n < 1 || n > maxTurns {
		return 0, true, fmt.Errorf("--dataset %s: want multiturn:N with 1 <= N <= %d turns", dataset, maxTurns)
	}
	return n, true, nil
}

// Conversation is one multi-turn chat of the multiturn dataset: the new
// user text of every turn. Turn k+1's prompt is turn k's prompt, then the
// server's answer to it, then Users[k] — the shape of a chat whose history
// is resent each turn, which a prefix (radix) cache serves from memory.
type Conversation struct {
	Users     []string
	UserLens  []int // tokens of each user text, as the local tokenizer counts them
	OutputLen int   // max tokens asked for in every turn
}

// MultiTurnConversations builds n conversations of the given number of
// turns from random real tokens (as RandomSamples): the first user text has
// firstLen tokens, each later one turnLen, and every turn asks for
// outputLen tokens.
func MultiTurnConversations(tok Tokenizer, n, turns, firstLen, turnLen, outputLen int, seed uint64) ([]Conversation, error) {
	if n < 1 || turns < 1 {
		return nil, fmt.Errorf("multiturn dataset: want >= 1 conversation and turn (got %d, %d)", n, turns)
	}
	first, err := RandomSamples(tok, n, firstLen, outputLen, 0, seed)
	if err != nil {
		return nil, fmt.Errorf("multiturn dataset: %w", err)
	}
	var later []Sample
	if turns > 1 {
		// A different seed stream, so later turns do not repeat the first.
		if later, err = RandomSamples(tok, n*(turns-1), turnLen, outputLen, 0, seed^0x7e57); err != nil {
			return nil, fmt.Errorf("multiturn dataset: %w", err)
		}
	}
	convs := make([]Conversation, n)
	for i := range convs {
		c := Conversation{OutputLen: outputLen, Users: []string{first[i].Prompt}, UserLens: []int{first[i].PromptLen}}
		for k := 1; k < turns; k++ {
			s := later[i*(turns-1)+k-1]
			// A space keeps the new text from gluing onto the answer's last word.
			c.Users = append(c.Users, " "+s.Prompt)
			c.UserLens = append(c.UserLens, s.PromptLen)
		}
		convs[i] = c
	}
	return convs, nil
}

// RunMultiTurn runs every conversation turn by turn: conversations start
// at the arrival times of cfg (MaxConcurrency caps the conversations in
// flight), and each next turn is sent as soon as the previous answer has
// streamed in, with that answer in its prompt. A failed turn ends its
// conversation (its later turns are not sent: they would have no answer
// to build on). The report's Results are conversation-major, Turns holds
// the per-turn summary.
func RunMultiTurn(ctx context.Context, cfg Config, convs []Conversation) (*Report, error) {
	if len(convs) == 0 {
		return nil, errors.New("bench: no conversations to send")
	}
	turns := len(convs[0].Users)
	for i, c := range convs {
		if len(c.Users) != turns || len(c.UserLens) != turns {
			return nil, fmt.Errorf("bench: conversation %d has %d turns, conversation 0 has %d", i, len(c.Users), turns)
		}
	}
	results := make([]*Result, len(convs)*turns)
	// The last turn's prompt holds every user text and every earlier answer
	// (at most OutputLen tokens each).
	need := demand{}
	for i, c := range convs {
		in := (turns - 1) * c.OutputLen
		for _, l := range c.UserLens {
			in += l
		}
		if in+c.OutputLen > need.input+need.output {
			need = demand{what: fmt.Sprintf("conversation %d (turn %d, with every earlier answer)", i, turns), input: in, output: c.OutputLen}
		}
	}
	rep, err := runJobs(ctx, cfg, len(convs), len(results), need, func(ctx context.Context, q *requester, i int, done func(*Result)) {
		c := convs[i]
		var prompt strings.Builder
		for k, user := range c.Users {
			if ctx.Err() != nil {
				return
			}
			prompt.WriteString(user)
			text := prompt.String()
			n := 0
			if cfg.Tokenizer != nil {
				n = len(cfg.Tokenizer.Encode(text, false))
			} else {
				for _, l := range c.UserLens[:k+1] {
					n += l // an estimate without the answers; servers report the real count
				}
			}
			r := q.send(ctx, cfg, Sample{Prompt: text, PromptLen: n, OutputLen: c.OutputLen})
			r.Turn = k + 1
			results[i*turns+k] = r
			done(r)
			if !r.Success {
				return
			}
			prompt.WriteString(r.text.String())
		}
	}, func() []*Result { return results })
	if err != nil {
		return nil, err
	}
	rep.Turns = turnStats(results, turns)
	return rep, nil
}

// TurnStats summarises one turn across conversations.
type TurnStats struct {
	Turn      int
	Completed int
	// PromptTokens and CachedTokens are totals over the completed requests
	// of the turn; PrefillTokens = PromptTokens - CachedTokens is what the
	// server had to compute. CachedKnown is false when the server reported
	// no cache counts (then CachedTokens is 0).
	PromptTokens, CachedTokens, PrefillTokens int
	CachedKnown                               bool
	TTFT                                      Stats
}

func turnStats(results []*Result, turns int) []TurnStats {
	out := make([]TurnStats, turns)
	ttfts := make([][]float64, turns)
	for k := range out {
		out[k].Turn = k + 1
	}
	for _, r := range results {
		if r == nil || !r.Success || r.Turn < 1 || r.Turn > turns {
			continue
		}
		t := &out[r.Turn-1]
		t.Completed++
		t.PromptTokens += r.PromptLen
		if r.CachedKnown {
			t.CachedTokens += r.CachedTokens
			t.CachedKnown = true
		}
		ttfts[r.Turn-1] = append(ttfts[r.Turn-1], ms(r.TTFT))
	}
	for k := range out {
		out[k].PrefillTokens = out[k].PromptTokens - out[k].CachedTokens
		out[k].TTFT = summarize(ttfts[k])
	}
	return out
}
