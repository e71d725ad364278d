package fakebackend

import (
	"math"
	"strings"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// seqRun is one sequence's generation and detokenization state.
type seqRun struct {
	idx      int
	script   []int32 // the reply's tokens, repeated when EOS may not come yet
	pos      int
	ids      []int32 // prompt + output, as the shm token array
	out      int     // output tokens so far
	dec      tokenizer.DecodeState
	recent   []string // emitted pieces, for stop-string matching
	finished bool
}

// embed answers an embedding request: one finish event whose vector
// depends only on the prompt (a hash per dimension, L2-normalised), so
// tests can tell prompts apart and see the same prompt embed alike.
func (b *Backend) embed(gr *groupRun) {
	defer b.finish(gr)
	v := make([]float32, b.opts.EmbedDim)
	var ss float64
	for i := range v {
		h := uint64(1469598103934665603) ^ uint64(i)
		for _, t := range gr.g.Prompt {
			h = (h ^ uint64(uint32(t))) * 1099511628211
		}
		v[i] = float32(int64(h%2001)-1000) / 1000
		ss += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(max(ss, 1e-24)))
	}
	select {
	case <-b.gateChan():
	case <-gr.abort:
		return
	}
	select {
	case gr.events <- apiserver.Event{TokenID: -1, Finished: true, Reason: apiserver.FinishStop, Embedding: v}:
	case <-gr.abort:
	}
}

// generate runs a group round-robin, one token per sequence per step, as
// continuous batching does, until every sequence finished or Abort.
func (b *Backend) generate(gr *groupRun, cacheLen int) {
	defer b.finish(gr)
	g := gr.g
	seqs := make([]*seqRun, g.N)
	for i := range seqs {
		script := b.tok.Encode(b.opts.Reply(g, i), false)
		if len(script) == 0 {
			script = b.tok.Encode(" the", false)
		}
		ids := make([]int32, len(g.Prompt), len(g.Prompt)+g.Params.MaxNewTokens)
		copy(ids, g.Prompt)
		seqs[i] = &seqRun{idx: i, script: script, ids: ids, dec: tokenizer.NewDecodeState(len(g.Prompt))}
	}
	left := g.N
	for left > 0 {
		for _, sq := range seqs {
			if sq.finished {
				continue
			}
			select {
			case <-b.gateChan():
			case <-gr.abort:
				return
			}
			if b.opts.StepDelay > 0 {
				t := time.NewTimer(b.opts.StepDelay)
				select {
				case <-t.C:
				case <-gr.abort:
					t.Stop()
					return
				}
			}
			ev := b.step(g, sq, cacheLen)
			select {
			case gr.events <- ev:
			case <-gr.abort:
				return
			}
			if ev.Finished {
				left--
			}
		}
	}
}

// step produces the next token of sq and the event for it.
func (b *Backend) step(g *apiserver.Group, sq *seqRun, cacheLen int) apiserver.Event {
	p := &g.Params
	eos := b.tok.EOS()
	var tok int32
	switch {
	case sq.pos < len(sq.script):
		tok = sq.script[sq.pos]
		sq.pos++
	case !p.IgnoreEOS && eos >= 0 && sq.out >= p.MinNewTokens-1:
		tok = eos // EOS is masked until min_new_tokens-1 tokens exist
	default:
		tok = sq.script[sq.pos%len(sq.script)]
		sq.pos++
	}
	sq.ids = append(sq.ids, tok)
	sq.out++
	ev := apiserver.Event{Seq: sq.idx, TokenID: tok, Special: b.tok.IsSpecial(tok), CountOutputTokens: sq.out,
		PromptCacheLen: cacheLen, HasLogprob: true, Logprob: -float32(sq.out%7+1) / 10, Rank: 1}
	if p.TopLogprobs > 0 {
		ev.TopLogprobs = append(ev.TopLogprobs, apiserver.TokenLogprob{TokenID: tok, Logprob: ev.Logprob})
		for k := 1; k < p.TopLogprobs; k++ {
			alt := int32((int(tok) + k) % b.tok.VocabSize())
			ev.TopLogprobs = append(ev.TopLogprobs, apiserver.TokenLogprob{TokenID: alt, Logprob: ev.Logprob - float32(k)})
		}
	}
	isEOS := tok == eos && eos >= 0
	if !isEOS || p.PrintEOSToken {
		ev.Text = b.tok.DecodeIncremental(sq.ids, &sq.dec, p.SkipSpecialTokens)
	}
	switch {
	case isEOS && !p.IgnoreEOS:
		ev.Finished, ev.Reason = true, apiserver.FinishStop
	case endsWithStopIDs(sq.ids[len(g.Prompt):], p.StopSequences):
		ev.Finished, ev.Reason = true, apiserver.FinishStop
	case sq.out >= p.MaxNewTokens:
		ev.Finished, ev.Reason = true, apiserver.FinishLength
	}
	if ev.Finished {
		decoded := sq.ids
		if isEOS && !p.PrintEOSToken {
			decoded = decoded[:len(decoded)-1] // a hidden EOS is never decoded
		}
		ev.Text += b.tok.DecodeFlush(decoded, &sq.dec, p.SkipSpecialTokens)
	}
	// The detokenizer's stop-string match on the last pieces (LightLLM
	// joins the last max_stop_len+10 strings).
	if !(ev.Finished && ev.Reason == apiserver.FinishStop) {
		sq.recent = append(sq.recent, ev.Text)
		if s := matchStopString(sq.recent, p.StopStrings()); s != "" {
			ev.Finished, ev.Reason, ev.StopStr = true, apiserver.FinishStop, s
		}
		if len(sq.recent) > 300 {
			sq.recent = sq.recent[len(sq.recent)-300:]
		}
	}
	sq.finished = ev.Finished
	return ev
}

func endsWithStopIDs(out []int32, stops []apiserver.StopSequence) bool {
	for _, s := range stops {
		n := len(s.IDs)
		if n == 0 || n > len(out) {
			continue
		}
		match := true
		for i, id := range s.IDs {
			if out[len(out)-n+i] != id {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// matchStopString returns the longest stop string found in the tail of the
// emitted pieces (LightLLM sorts stop strings by length, longest first).
func matchStopString(recent []string, stops []string) string {
	if len(stops) == 0 {
		return ""
	}
	maxLen := 0
	for _, s := range stops {
		maxLen = max(maxLen, len(s))
	}
	var tail strings.Builder
	for i := max(0, len(recent)-maxLen-10); i < len(recent); i++ {
		tail.WriteString(recent[i])
	}
	t := tail.String()
	best := ""
	for _, s := range stops {
		if len(s) > len(best) && strings.Contains(t, s) {
			best = s
		}
	}
	return best
}
