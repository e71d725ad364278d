// Package fakebackend is a test double for apiserver.Backend. It does not
// run a model: each sequence "generates" a scripted reply, one token at a
// time, through a real tokenizer, with LightLLM's detokenizer and stop
// semantics (offset-based incremental decoding that holds back incomplete
// UTF-8, stop token id sequences, stop strings matched on the decoded text,
// EOS, min/max new tokens, ignore_eos). Tests of the HTTP layer, and
// end-to-end tests that need a backend without a model, use it.
package fakebackend

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// Options configure the double.
type Options struct {
	// Reply is the text sequence seq of g generates before EOS; nil uses
	// DefaultReply.
	Reply func(g *apiserver.Group, seq int) string
	// StepDelay is the time per token (0: as fast as the reader).
	StepDelay time.Duration
	// MaxTotalTokens is the KV capacity reported to the length rule
	// (default 4096).
	MaxTotalTokens int
	// Capacity bounds the sequences in flight; past it Submit returns
	// ErrOverloaded. 0: no bound.
	Capacity int
	// EmbedDim is the length of the vectors embedding requests get (a
	// deterministic function of the prompt); 0 refuses them.
	EmbedDim int
}

// GreedyReply is what DefaultReply generates for greedy requests: the
// start of stories260K's real greedy output from BOS.
const GreedyReply = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."

// sampleWords are what sampled replies draw from; CJK and emoji exercise
// byte-fallback tokens that split characters.
var sampleWords = []string{"the", "cat", "sat", "on", "a", "big", "red", "ball", "and", "smiled",
	"你好", "世界", "小猫", "😀", "🚀", "naïve", "café", "über", "dog", "happy"}

// DefaultReply is GreedyReply for greedy requests; sampled requests get a
// dozen words drawn with the sequence's seed (Group.SeqSeed), so the same
// seed gives the same text and n sequences differ.
func DefaultReply(g *apiserver.Group, seq int) string {
	if g.Params.TopK == 1 {
		return GreedyReply
	}
	seed := g.SeqSeed(seq)
	if seed < 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = int64(binary.LittleEndian.Uint64(b[:]) >> 1)
	}
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	words := make([]string, 12)
	for i := range words {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		words[i] = sampleWords[x%uint64(len(sampleWords))]
	}
	return strings.Join(words, " ") + "."
}

// Backend is the test double.
type Backend struct {
	tok  *tokenizer.Tokenizer
	opts Options

	ready, healthy atomic.Bool
	submitErr      atomic.Pointer[error]

	mu        sync.Mutex
	nextID    uint64
	running   map[uint64]*groupRun
	inflight  int // sequences
	submitted []apiserver.Group
	aborted   []uint64
	prompts   [][]int32 // recent prompts, for the prefix-cache length
	gate      chan struct{}
}

type groupRun struct {
	id     uint64
	g      *apiserver.Group
	events chan apiserver.Event
	abort  chan struct{}
	once   sync.Once
}

// New returns a ready, healthy double over tok.
func New(tok *tokenizer.Tokenizer, opts Options) *Backend {
	if opts.Reply == nil {
		opts.Reply = DefaultReply
	}
	if opts.MaxTotalTokens == 0 {
		opts.MaxTotalTokens = 4096
	}
	b := &Backend{tok: tok, opts: opts, running: map[uint64]*groupRun{}, nextID: 8}
	b.ready.Store(true)
	b.healthy.Store(true)
	b.gate = make(chan struct{})
	close(b.gate)
	return b
}

// SetReady and SetHealthy flip what Ready and Healthy report.
func (b *Backend) SetReady(v bool)   { b.ready.Store(v) }
func (b *Backend) SetHealthy(v bool) { b.healthy.Store(v) }

// FailSubmit makes Submit return err (nil: succeed again).
func (b *Backend) FailSubmit(err error) {
	if err == nil {
		b.submitErr.Store(nil)
		return
	}
	b.submitErr.Store(&err)
}

// Pause stops every sequence before its next token until Resume.
func (b *Backend) Pause() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.gate:
		b.gate = make(chan struct{})
	default:
	}
}

// Resume lets paused sequences go on.
func (b *Backend) Resume() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.gate:
	default:
		close(b.gate)
	}
}

func (b *Backend) gateChan() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gate
}

// Submitted returns copies of every group submitted so far.
func (b *Backend) Submitted() []apiserver.Group {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]apiserver.Group(nil), b.submitted...)
}

// Aborted lists the group ids Abort was called with.
func (b *Backend) Aborted() []uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]uint64(nil), b.aborted...)
}

// Running is the number of groups still generating.
func (b *Backend) Running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.running)
}

// Submit implements apiserver.Backend.
func (b *Backend) Submit(ctx context.Context, g *apiserver.Group) (*apiserver.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p := b.submitErr.Load(); p != nil {
		return nil, *p
	}
	if !b.ready.Load() {
		return nil, apiserver.ErrNotReady
	}
	if g.N < 1 || g.N > apiserver.MaxBestOf || len(g.Prompt) == 0 || (g.Params.MaxNewTokens < 1) != g.Params.Embed ||
		(g.Params.Embed && (g.N != 1 || b.opts.EmbedDim <= 0)) {
		return nil, errors.Join(apiserver.ErrInvalidRequest, errors.New("fakebackend: malformed group"))
	}
	b.mu.Lock()
	if b.opts.Capacity > 0 && b.inflight+g.N > b.opts.Capacity {
		b.mu.Unlock()
		return nil, apiserver.ErrOverloaded
	}
	id := b.nextID
	b.nextID += apiserver.MaxBestOf // sub-request ids are id+0..7, as LightLLM's
	gr := &groupRun{id: id, g: g, events: make(chan apiserver.Event, 8), abort: make(chan struct{})}
	b.running[id] = gr
	b.inflight += g.N
	b.submitted = append(b.submitted, *g)
	cache := 0
	if !g.Params.DisablePromptCache {
		cache = b.cacheLenLocked(g.Prompt)
	}
	b.mu.Unlock()
	if g.Params.Embed {
		go b.embed(gr)
		return &apiserver.Stream{ID: id, Events: gr.events}, nil
	}
	go b.generate(gr, cache)
	return &apiserver.Stream{ID: id, Events: gr.events}, nil
}

// cacheLenLocked is the longest prefix shared with a recent prompt, at most
// len-1 (the last prompt token is always computed), like a radix cache.
func (b *Backend) cacheLenLocked(p []int32) int {
	best := 0
	for _, q := range b.prompts {
		n := 0
		for n < len(p)-1 && n < len(q) && p[n] == q[n] {
			n++
		}
		best = max(best, n)
	}
	b.prompts = append(b.prompts, append([]int32(nil), p...))
	if len(b.prompts) > 64 {
		b.prompts = b.prompts[1:]
	}
	return best
}

// Abort implements apiserver.Backend.
func (b *Backend) Abort(id uint64) {
	b.mu.Lock()
	b.aborted = append(b.aborted, id)
	gr := b.running[id]
	b.mu.Unlock()
	if gr != nil {
		gr.once.Do(func() { close(gr.abort) })
	}
}

// Ready implements apiserver.Backend.
func (b *Backend) Ready() bool { return b.ready.Load() }

// Healthy implements apiserver.Backend.
func (b *Backend) Healthy() bool { return b.healthy.Load() }

// MaxTotalTokens implements apiserver.Backend.
func (b *Backend) MaxTotalTokens() int { return b.opts.MaxTotalTokens }

// TokenLoad implements apiserver.Backend: the share of the KV capacity the
// running groups hold (prompt + max new tokens, a conservative estimate).
func (b *Backend) TokenLoad() apiserver.TokenLoad {
	b.mu.Lock()
	defer b.mu.Unlock()
	used := 0
	for _, gr := range b.running {
		used += len(gr.g.Prompt) + gr.g.N*gr.g.Params.MaxNewTokens
	}
	load := float64(used) / float64(b.opts.MaxTotalTokens)
	return apiserver.TokenLoad{CurrentLoad: []float64{load}, LogicalMaxLoad: []float64{load}, DynamicMaxLoad: []float64{load}}
}

func (b *Backend) finish(gr *groupRun) {
	b.mu.Lock()
	delete(b.running, gr.id)
	b.inflight -= gr.g.N
	b.mu.Unlock()
	close(gr.events)
}
