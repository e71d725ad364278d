// Package detok is the detokenizer role (cmd/detokenizer): it turns the
// token ids infer publishes in each request's shm slot into text,
// incrementally and UTF-8 safe, matches stop strings on the decoded text,
// and queues one text piece per generated token in the slot's text queue for
// the apiserver, which it wakes through the apiserver's shm doorbell.
//
// All of its per-request state lives in the slot (decode offsets, tokens
// emitted, stop-string match), committed after each piece is queued, so a
// restarted detokenizer resumes exactly where its predecessor stopped. If it
// dies between queueing a piece and committing, the piece is queued again
// with the same source index, which the apiserver drops as a repeat.
package detok

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
	"github.com/lightllm-go/lightllm/shm"
)

// Timing of the detokenizer loop.
const (
	// idleWait bounds a sleep on the doorbell while a piece is blocked on
	// a full text queue: it is retried at this pace (Options.IdleWait
	// otherwise; infer rings the bell after publishing tokens).
	idleWait = 20 * time.Millisecond
	// scanEvery is how often the slot table is scanned for live requests
	// whose announcement never came (the intake ring was full while this
	// role was down, or its producer died mid-announcement).
	scanEvery = 50 * time.Millisecond
	// stallLimit: a loop iteration this long withholds the heartbeat.
	stallLimit = 10 * time.Second
	// stopTailSlack is how many bytes beyond the longest stop string the
	// matcher keeps, as LightLLM's max_stop_len+10.
	stopTailSlack = 10
)

// Tokenizer is what the detokenizer needs from pkg/tokenizer.
type Tokenizer interface {
	Decode(ids []int32, skipSpecial bool) string
	DecodeIncremental(ids []int32, st *tokenizer.DecodeState, skipSpecial bool) string
	DecodeFlush(ids []int32, st *tokenizer.DecodeState, skipSpecial bool) string
	IsSpecial(id int32) bool
}

// Run is the detokenizer role's body: `func main() { os.Exit(rolectl.Main(config.RoleDetokenizer, detok.Run)) }`.
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	tok, err := model.LoadTokenizer(cfg.ModelDir) // a path, or a builtin:NAME model
	if err != nil {
		return fmt.Errorf("detokenizer: %w", err)
	}
	region, err := pipeline.OpenRegion(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer region.Close()
	w, err := NewWorker(region, tok, Options{EOS: cfg.EosID, Log: log, IdleWait: cfg.IdleWait(),
		StreamInterval: cfg.StreamInterval.D()})
	if err != nil {
		return err
	}
	ctl.SetProgressCheck(w.Progress)
	if err := ctl.Ready(ctx); err != nil {
		return err
	}
	return w.Run(ctx)
}

// Options configure NewWorker.
type Options struct {
	// EOS ids decode to "" (LightLLM's print_eos_token=False).
	EOS []int
	Log zerolog.Logger
	// IdleWait bounds a sleep on the doorbell when no piece waits for
	// room (config.IdleWait); 0 is idleWait.
	IdleWait time.Duration
	// StreamInterval paces the hand-over of each stream's tokens to the
	// apiserver (config.StreamSpacing); 0 hands over whatever is
	// published at every pass.
	StreamInterval time.Duration
}

// Worker decodes the live slots of a region. Run and Pass must be called
// from one goroutine; Progress from any.
type Worker struct {
	region *shm.Region
	tok    Tokenizer
	log    zerolog.Logger
	eos    map[int32]bool
	self   *shm.RoleState
	api    *shm.RoleState

	taken    [][]shm.SlotGen // DetokIntake's groups, reused between passes
	slots    map[int]*dslot
	lastScan time.Time
	lastIter atomic.Int64
	idleWait time.Duration // Options.IdleWait
	// blocked: the last pass left a piece for want of room in a text
	// queue (the apiserver rings no bell when it makes room).
	blocked bool
	// streamInterval is Options.StreamInterval; held: the last pass left a
	// stream's published tokens for a later hand-over (Pass).
	streamInterval time.Duration
	held           bool
}

// dslot is a slot being decoded.
type dslot struct {
	s           *shm.Slot
	gen         uint32
	prompt      int
	skipSpecial bool
	stops       []string
	maxStop     int
	tail        string    // recent text, for stop strings spanning pieces
	handedOver  time.Time // when a pass last queued pieces
}

// NewWorker takes the detokenizer role in region (bumping its epoch).
func NewWorker(region *shm.Region, tok Tokenizer, o Options) (*Worker, error) {
	w := &Worker{region: region, tok: tok, log: o.Log, eos: map[int32]bool{},
		slots: map[int]*dslot{}, idleWait: o.IdleWait, streamInterval: o.StreamInterval}
	if w.idleWait <= 0 {
		w.idleWait = idleWait
	}
	for _, id := range o.EOS {
		w.eos[int32(id)] = true
	}
	var err error
	if w.self, err = region.Role(shm.RoleDetokenizer); err != nil {
		return nil, err
	}
	if w.api, err = region.Role(shm.RoleAPIServer); err != nil {
		return nil, err
	}
	epoch, err := region.BeginEpoch(shm.RoleDetokenizer)
	if err != nil {
		return nil, err
	}
	w.lastIter.Store(time.Now().UnixNano())
	w.scan()
	w.log.Info().Uint32("epoch", epoch).Int("resumed", len(w.slots)).Msg("detokenizer attached")
	return w, nil
}

// Progress is the heartbeat's check.
func (w *Worker) Progress() error {
	if age := time.Since(time.Unix(0, w.lastIter.Load())); age > stallLimit {
		return fmt.Errorf("detokenizer loop stalled for %s", age.Round(time.Millisecond))
	}
	return nil
}

// Run decodes until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	bell := w.region.Bell(w.self)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		seen := bell.Seq()
		w.Pass()
		now := time.Now().UnixNano()
		w.lastIter.Store(now)
		w.self.HeartbeatUnixNano.Store(now)
		wait := w.idleWait
		if w.blocked || w.region.DetokIntake().Pending() {
			wait = min(wait, idleWait)
		}
		if w.held {
			// infer rings at least this often while it publishes; this
			// bounds the hold should it stop (a restart).
			wait = min(wait, config.StreamSpacing(w.streamInterval, len(w.slots)))
		}
		bell.Wait(seen, wait)
	}
}

// Pass takes new slots, decodes every tracked slot as far as it can, and
// wakes the apiserver if any text was queued.
//
// A stream whose tokens were handed over less than 3/4 of
// config.StreamSpacing ago keeps its new tokens for a later pass unless it
// has finished or nothing of it was handed over yet. infer already rings
// for tokens alone at that spacing, but it rings at once for any request's
// first token or end, and with requests arriving and ending at every step
// (hundreds of streams) those rings would hand every stream's tokens over
// at every step: a write to the client and a read by it per token. The
// quarter of slack absorbs the wake-up jitter between infer's paced rings.
func (w *Worker) Pass() {
	w.takeIntake()
	if time.Since(w.lastScan) >= scanEvery {
		w.scan()
	}
	pushed := false
	w.blocked, w.held = false, false
	now := time.Now()
	hold := config.StreamSpacing(w.streamInterval, len(w.slots)) * 3 / 4
	for i, d := range w.slots {
		if hold > 0 && now.Sub(d.handedOver) < hold && d.holdable() {
			w.held = true
			continue
		}
		p, done := w.decode(d)
		if p {
			d.handedOver = now
		}
		pushed = pushed || p
		if done {
			delete(w.slots, i)
		}
	}
	if pushed {
		w.region.Bell(w.api).Ring()
	}
}

// takeIntake tracks the slots the apiserver announced since the last
// pass. Nobody rings for an announcement: a queued request has nothing to
// decode until infer publishes its first token, and infer rings then.
func (w *Worker) takeIntake() {
	var st shm.IntakeStats
	w.taken, st = w.region.DetokIntake().Take(w.taken[:0])
	if st != (shm.IntakeStats{}) {
		// Their slots, if still live, are tracked by the next scan.
		w.log.Warn().Int("holes", st.Holes).Int("orphaned", st.Orphaned).Int("corrupt", st.Corrupt).
			Msg("intake entries stepped over")
		w.lastScan = time.Time{}
	}
	for _, g := range w.taken {
		for _, sg := range g {
			w.track(int(sg.Slot), sg.Gen)
		}
	}
}

// scan tracks every live slot the detokenizer has not finished.
func (w *Worker) scan() {
	w.lastScan = time.Now()
	for i := 0; i < w.region.NumSlots(); i++ {
		s, err := w.region.Slot(i)
		if err != nil {
			return
		}
		if st, gen := s.Load(); live(st) && s.DetokDone.Load() == 0 {
			w.track(i, gen)
		}
	}
}

func live(st shm.State) bool {
	return st == shm.StateQueued || st == shm.StateRunning || st == shm.StateFinished || st == shm.StateAborted
}

// track starts decoding slot index at generation gen, resuming from the
// offsets in the slot.
func (w *Worker) track(index int, gen uint32) {
	if d := w.slots[index]; d != nil && d.gen == gen {
		return
	}
	s, err := w.region.Slot(index)
	if err != nil {
		return
	}
	st, g := s.Load()
	if g != gen || !live(st) || s.DetokDone.Load() != 0 {
		return
	}
	if err := s.Validate(); err != nil {
		// A torn slot: the apiserver aborts it; never decode garbage.
		w.log.Error().Err(err).Int("slot", index).Msg("torn slot not decoded")
		return
	}
	d := &dslot{s: s, gen: gen, prompt: int(s.PromptLen.Load()), skipSpecial: s.Flags.Load()&shm.FlagSkipSpecialTokens != 0}
	x, err := s.ExtrasFor(gen)
	if err != nil {
		// Torn extras: the slot cannot be decoded as asked (its stop
		// strings would be ignored); wait for the apiserver's recovery.
		w.log.Error().Err(err).Int("slot", index).Msg("slot extras unreadable: not decoded")
		return
	}
	stops := x.StopStrings
	d.stops = stops
	for _, x := range stops {
		d.maxStop = max(d.maxStop, len(x))
	}
	if s.ReadOffset.Load() == 0 { // fresh: LightLLM's initial offsets
		ds := tokenizer.NewDecodeState(d.prompt)
		s.PrefixOffset.Store(uint32(ds.PrefixOffset))
		s.ReadOffset.Store(uint32(ds.ReadOffset))
	} else if emitted := int(s.EmittedOutLen.Load()); emitted > 0 && len(stops) > 0 {
		// Resuming: rebuild the recent text a stop string may span.
		if seq, err := s.Sequence(); err == nil && d.prompt+emitted <= len(seq) {
			from := max(d.prompt, d.prompt+emitted-(d.maxStop+stopTailSlack))
			d.tail = w.tok.Decode(seq[from:d.prompt+emitted], d.skipSpecial)
		}
	}
	w.slots[index] = d
}

// over reports whether d needs no more decoding: its slot was reused or
// is no longer live, or its last piece is queued.
func (d *dslot) over() bool {
	st, g := d.s.Load()
	return g != d.gen || !live(st) || d.s.DetokDone.Load() != 0
}

// holdable reports whether d's published tokens may wait for a later
// pass: it has new ones, it has handed some over already, and it has not
// finished (an end, an abort or a reused slot goes at once).
func (d *dslot) holdable() bool {
	if d.over() {
		return false
	}
	s := d.s
	emitted := s.EmittedOutLen.Load()
	return emitted > 0 && s.CandetokenOutLen.Load() > emitted && shm.FinishStatus(s.FinishStatus.Load()) == shm.FinishNone
}

// decode queues the pieces of the tokens published since the last pass. It
// reports whether anything was queued, and done once the slot needs no
// more work (its last piece is queued, or it was reused).
func (w *Worker) decode(d *dslot) (pushed, done bool) {
	s := d.s
	if d.over() {
		return false, true
	}
	// candetoken_out_len first: the tokens and the finish fields stored
	// before it are then visible.
	cand := int(s.CandetokenOutLen.Load())
	fs := shm.FinishStatus(s.FinishStatus.Load())
	last := -2 // index of the final output token; -2: not finished yet
	if fs != shm.FinishNone {
		last = int(s.FinishTokenIndex.Load()) - d.prompt
	}
	seq, err := s.Sequence()
	if err != nil || len(seq) < d.prompt+cand {
		w.log.Error().Err(err).Int("slot", s.Index).Msg("unreadable token array")
		return false, false
	}
	emitted := int(s.EmittedOutLen.Load())
	for k := emitted; k < cand; k++ {
		ids := seq[:d.prompt+k+1]
		tok := ids[len(ids)-1]
		st := tokenizer.DecodeState{PrefixOffset: int(s.PrefixOffset.Load()), ReadOffset: int(s.ReadOffset.Load())}
		final := k == last
		var text string
		switch {
		case w.eos[tok] && final:
			text = w.tok.DecodeFlush(ids[:len(ids)-1], &st, d.skipSpecial)
		case w.eos[tok]:
			// LightLLM's print_eos_token=False: EOS adds no text.
		case final:
			text = w.tok.DecodeFlush(ids, &st, d.skipSpecial)
		default:
			text = w.tok.DecodeIncremental(ids, &st, d.skipSpecial)
		}
		tail, matched := d.tail, false
		if fs != shm.FinishStop {
			tail, matched = d.matchStop(text)
		}
		piece := shm.TextPiece{Text: []byte(text), SrcIndex: uint32(k), Special: w.tok.IsSpecial(tok), Final: final || matched}
		if limit := shm.MaxTextPiece(w.region.Sizes().TextQueueBytes); len(piece.Text) > limit {
			piece.Text = piece.Text[:limit]
		}
		if err := s.PushText(piece); err != nil {
			if !errors.Is(err, shm.ErrTextFull) {
				w.log.Error().Err(err).Int("slot", s.Index).Msg("text queue")
			}
			w.blocked = true
			return pushed, false // retried next pass, offsets untouched
		}
		pushed = true
		d.tail = tail
		if matched {
			s.StopMatchedIndex.Store(uint32(k))
			s.StopMatched.Store(1)
			w.region.Commands().DataBell().Ring() // infer polls the flag; wake it if idle
		}
		s.PrefixOffset.Store(uint32(st.PrefixOffset))
		s.ReadOffset.Store(uint32(st.ReadOffset))
		s.EmittedOutLen.Store(uint32(k + 1))
		if piece.Final {
			s.DetokDone.Store(1)
			return true, true
		}
	}
	// Finished with every token already queued but none marked final (an
	// abort after the last token, or before any): a token-less final piece
	// with SrcIndex = the number of output tokens.
	if last != -2 && last < int(s.EmittedOutLen.Load()) {
		if err := s.PushText(shm.TextPiece{SrcIndex: uint32(s.EmittedOutLen.Load()), Final: true}); err != nil {
			w.blocked = true
			return pushed, false
		}
		s.DetokDone.Store(1)
		return true, true
	}
	return pushed, false
}

// matchStop returns the recent text with text added (trimmed to what a stop
// string can still span) and whether a stop string occurs in it.
func (d *dslot) matchStop(text string) (string, bool) {
	if len(d.stops) == 0 {
		return "", false
	}
	tail := d.tail + text
	for _, x := range d.stops {
		if strings.Contains(tail, x) {
			return tail, true
		}
	}
	if keep := d.maxStop + stopTailSlack; len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	return tail, false
}
