package apiserver

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"
)

// run is one admitted group being read.
type run struct {
	s      *Server
	acc    *access // the request's access log record; nil outside the middleware
	group  *Group
	path   string
	id     uint64
	events <-chan Event
	left   int    // sequences not finished
	done   []bool // per sequence
	closed bool   // events channel closed

	firstToken time.Duration
	tokens     []int // generated tokens per sequence
	cacheLen   int
	finish     []FinishReason
	lastTok    []time.Time // per sequence, for the status page's inter-token gaps
	abortOnce  sync.Once
	// probe: a health probe's request, kept out of the Observer.
	probe bool
	// sse, when set, is the stream the events are written to: its writes
	// are flushed when next would block, not one by one (see attach).
	sse *sseWriter
}

// attach makes next flush sse only when no further event is waiting, so
// the events that are already queued when the handler wakes (the
// detokenizer delivers a step's tokens together; a busy apiserver falls
// behind by several) go out in one write instead of one write syscall
// each. Nothing waits for a later event: the flush happens before next
// blocks, so a lone event is sent at once, as before.
func (r *run) attach(sse *sseWriter) {
	r.sse = sse
	sse.deferFlush = true
}

// submit admits g: refused while draining, when the server is not ready,
// and past MaxInFlight sequences; then the backend's Submit.
func (s *Server) submit(ctx context.Context, path string, g *Group) (*run, *apiError) {
	if s.draining.Load() {
		return nil, unavailable(codeDraining, "the server is shutting down, retry on another replica", s.opts.RetryAfter)
	}
	if !s.backend.Ready() {
		return nil, unavailable(codeNotReady, "the server is not ready yet (model loading)", s.opts.RetryAfter)
	}
	n := int64(g.N)
	if limit := int64(s.opts.MaxInFlight); limit > 0 {
		if s.seqs.Add(n) > limit {
			s.seqs.Add(-n)
			return nil, overloaded("the server is overloaded (too many requests in flight), retry later", s.opts.RetryAfter)
		}
	} else {
		s.seqs.Add(n)
	}
	if g.Arrival.IsZero() {
		g.Arrival = time.Now()
	}
	st, err := s.backend.Submit(ctx, g)
	if err != nil {
		s.seqs.Add(-n)
		if ctx.Err() != nil {
			return nil, nil // the client is gone; nothing to answer
		}
		return nil, s.asAPIError(err)
	}
	acc, _ := ctx.Value(accessKey).(*access)
	rn := &run{s: s, acc: acc, group: g, path: path, id: st.ID, events: st.Events, left: g.N, done: make([]bool, g.N),
		tokens: make([]int, g.N), finish: make([]FinishReason, g.N), lastTok: make([]time.Time, g.N), probe: isHealthProbe(ctx)}
	if !rn.probe {
		s.live.admit()
	}
	if ao, ok := s.opts.Observer.(AdmissionObserver); ok && !rn.probe {
		ao.RequestAdmitted(path)
	}
	return rn, nil
}

// next returns the next event; ok is false when every sequence has
// finished. When ctx ends first (the client went away) the group is
// aborted and ctx's error returned.
func (r *run) next(ctx context.Context) (Event, bool, error) {
	for r.left > 0 {
		if r.closed {
			return r.lostSequence(), true, nil
		}
		if r.sse != nil && len(r.events) == 0 {
			r.sse.flush()
		}
		select {
		case ev, ok := <-r.events:
			if !ok {
				r.closed = true
				continue
			}
			if ev.Seq < 0 || ev.Seq >= len(r.done) || r.done[ev.Seq] {
				r.s.log.Warn().Uint64("group", r.id).Int("seq", ev.Seq).Msg("backend sent an event for no running sequence; ignored")
				continue
			}
			r.account(&ev)
			return ev, true, nil
		case <-ctx.Done():
			r.abort()
			return Event{}, false, ctx.Err()
		}
	}
	return Event{}, false, nil
}

// lostSequence finishes the first unfinished sequence with an error: the
// backend closed the stream early.
func (r *run) lostSequence() Event {
	for i, d := range r.done {
		if !d {
			ev := Event{Seq: i, TokenID: -1, Finished: true, Reason: FinishError,
				Err: "the backend ended the stream before the sequence finished"}
			r.account(&ev)
			return ev
		}
	}
	return Event{}
}

func (r *run) account(ev *Event) {
	if ev.TokenID >= 0 {
		now := time.Now()
		if r.firstToken == 0 {
			r.firstToken = max(now.Sub(r.group.Arrival), time.Nanosecond)
		}
		r.tokens[ev.Seq]++
		if !r.probe {
			var gap time.Duration
			if last := r.lastTok[ev.Seq]; !last.IsZero() {
				gap = max(now.Sub(last), time.Nanosecond)
			}
			r.lastTok[ev.Seq] = now
			r.s.live.token(now, gap)
		}
	}
	if ev.PromptCacheLen > r.cacheLen {
		r.cacheLen = ev.PromptCacheLen
	}
	if ev.Finished {
		if ev.Reason == FinishNone {
			ev.Reason = FinishStop
		}
		r.done[ev.Seq] = true
		r.finish[ev.Seq] = ev.Reason
		r.left--
	}
}

func (r *run) abort() {
	r.abortOnce.Do(func() {
		r.s.log.Debug().Uint64("group", r.id).Str("request_id", r.group.RequestID).Msg("aborting request")
		r.s.backend.Abort(r.id)
	})
}

// close ends the run: an unfinished group is aborted (client gone, write
// error, or an error of ours), the admission count is released and the
// observer told.
func (r *run) close() {
	if r.left > 0 {
		r.abort()
		if ao, ok := r.s.opts.Observer.(AbortObserver); ok && !r.probe {
			ao.RequestAborted(r.path)
		}
	}
	if acc := r.acc; acc != nil {
		total := 0
		for _, n := range r.tokens {
			total += n
		}
		acc.add(len(r.group.Prompt), total)
	}
	r.s.seqs.Add(-int64(r.group.N))
	if !r.probe {
		r.s.live.done(time.Now(), r.left == 0, slices.Contains(r.finish, FinishError), r.firstToken, len(r.group.Prompt), r.cacheLen)
	}
	if r.left == 0 && r.s.opts.Observer != nil && !r.probe {
		total := 0
		for _, n := range r.tokens {
			total += n
		}
		r.s.opts.Observer.RequestDone(RequestStats{Path: r.path, PromptTokens: len(r.group.Prompt),
			CompletionTokens: total, PromptCacheLen: r.cacheLen, MaxNewTokens: r.group.Params.MaxNewTokens,
			FirstToken: r.firstToken, Total: time.Since(r.group.Arrival), Finish: r.finish})
	}
}

// completionTokens counts generated tokens over all sequences.
func (r *run) completionTokens() int {
	n := 0
	for _, t := range r.tokens {
		n += t
	}
	return n
}

// sseWriter writes Server-Sent Events. LightLLM's native stream writes
// "data:" with no space, OpenAI's "data: ".
type sseWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	prefix string
	err    error
	// deferFlush: raw leaves the flush to flush (a run attached to the
	// writer calls it before waiting); unflushed says there is one to do.
	deferFlush, unflushed bool
}

func newSSE(w http.ResponseWriter, native bool) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), prefix: "data: "}
	if native {
		s.prefix = "data:"
	}
	// Send the headers now: the client learns the request was admitted
	// before the first token, which may take a long prefill.
	s.err = s.rc.Flush()
	return s
}

// event writes one "data:" event holding v as JSON and flushes it.
func (s *sseWriter) event(v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return s.raw(b)
}

func (s *sseWriter) raw(b []byte) error {
	if s.err != nil {
		return s.err
	}
	buf := make([]byte, 0, len(s.prefix)+len(b)+2)
	buf = append(buf, s.prefix...)
	buf = append(buf, b...)
	buf = append(buf, '\n', '\n')
	return s.write(buf)
}

// write writes one whole event, "data: ...\n\n" (the ResponseWriter copies
// it: the caller may reuse buf).
func (s *sseWriter) write(buf []byte) error {
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(buf); err != nil {
		s.err = err
		return err
	}
	s.unflushed = true
	if !s.deferFlush {
		s.flush()
	}
	return s.err
}

// flush sends what raw wrote since the last flush.
func (s *sseWriter) flush() {
	if s.err != nil || !s.unflushed {
		return
	}
	s.unflushed = false
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
}

// done writes OpenAI's terminating event.
func (s *sseWriter) done() error { return s.raw([]byte("[DONE]")) }
