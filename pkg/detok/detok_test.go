package detok

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
	"github.com/lightllm-go/lightllm/shm"
)

func loadTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	dir := os.Getenv("LIGHTLLM_TEST_MODELS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "models")
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "stories260K", "hf"))
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K tokenizer not available (set LIGHTLLM_TEST_MODELS): %v", err), nil)
	}
	return tok
}

func newRegion(t *testing.T, textQueue uint32) *shm.Region {
	t.Helper()
	r, err := shm.Create(shm.CreateOptions{BaseDir: t.TempDir(), Instance: "t", NoReserve: true,
		Sizes: shm.Sizes{Slots: 4, MaxReqTotalLen: 256, TextQueueBytes: textQueue}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Destroy() })
	return r
}

// running makes a Running slot for prompt, as apiserver and router would.
func running(t *testing.T, r *shm.Region, prompt []int32, maxNew uint32, stops ...string) (*shm.Slot, uint32) {
	t.Helper()
	s, gen, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	p := sampler.Params{MaxNewTokens: int(maxNew), TopK: 1, Temperature: 1, TopP: 1, RepetitionPenalty: 1, SkipSpecialTokens: true}
	if err := s.Fill(gen, shm.Request{Prompt: prompt, Params: p, Extras: shm.Extras{StopStrings: stops}}); err != nil {
		t.Fatal(err)
	}
	s.Transition(gen, shm.StateAllocated, shm.StateQueued)
	s.Transition(gen, shm.StateQueued, shm.StateRunning)
	return s, gen
}

// reader plays the apiserver: it pops pieces and keeps the first of each
// source index.
type reader struct {
	pieces []shm.TextPiece
	final  bool
}

func (rd *reader) drain(t *testing.T, s *shm.Slot) {
	t.Helper()
	for {
		p, ok, err := s.PopText(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if rd.final {
			t.Fatalf("piece %+v after the final one", p)
		}
		if n := len(rd.pieces); n > 0 && p.SrcIndex <= rd.pieces[n-1].SrcIndex && !p.Final {
			t.Fatalf("piece for token %d after token %d", p.SrcIndex, rd.pieces[n-1].SrcIndex)
		}
		rd.pieces = append(rd.pieces, p)
		rd.final = p.Final
	}
}

func (rd *reader) text() string {
	var b strings.Builder
	for _, p := range rd.pieces {
		b.Write(p.Text)
	}
	return b.String()
}

// generate publishes outs one token at a time (the last one finishing the
// request), running pass between tokens; restartAt > 0 replaces the worker
// (a detokenizer restart) after that many tokens.
func generate(t *testing.T, r *shm.Region, s *shm.Slot, outs []int32, fin shm.FinishStatus, newWorker func() *Worker, restartAt int) *reader {
	t.Helper()
	w := newWorker()
	rd := &reader{}
	for i, tok := range outs {
		if i == restartAt && restartAt > 0 {
			w = newWorker()
		}
		s.SetOutput(i, tok)
		st := shm.FinishNone
		if i == len(outs)-1 {
			st = fin
		}
		s.Publish(uint32(i+1), st)
		w.Pass()
		rd.drain(t, s)
	}
	for i := 0; i < 3 && !rd.final; i++ {
		w.Pass()
		rd.drain(t, s)
	}
	return rd
}

func workerFactory(t *testing.T, r *shm.Region, tok Tokenizer) func() *Worker {
	return func() *Worker {
		w, err := NewWorker(r, tok, Options{EOS: []int{2}, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
}

func TestDecodeStream(t *testing.T) {
	tok := loadTokenizer(t)
	text := "Once upon a time, there was a little girl named Lily. Héllo wörld 😀 你好!"
	ids := tok.Encode(text, false)
	for _, restartAt := range []int{0, 5, len(ids) - 1} {
		r := newRegion(t, 4096)
		s, _ := running(t, r, []int32{1}, uint32(len(ids)))
		rd := generate(t, r, s, ids, shm.FinishLength, workerFactory(t, r, tok), restartAt)
		if got := rd.text(); got != text {
			t.Errorf("restart at %d: text %q, want %q", restartAt, got, text)
		}
		if len(rd.pieces) != len(ids) {
			t.Errorf("restart at %d: %d pieces for %d tokens", restartAt, len(rd.pieces), len(ids))
		}
		for _, p := range rd.pieces {
			if strings.ContainsRune(string(p.Text), '\uFFFD') {
				t.Errorf("piece %d holds a broken character: %q", p.SrcIndex, p.Text)
			}
		}
		if !rd.final || s.DetokDone.Load() != 1 || int(s.EmittedOutLen.Load()) != len(ids) {
			t.Errorf("restart at %d: final %v, detok done %d, emitted %d", restartAt, rd.final, s.DetokDone.Load(), s.EmittedOutLen.Load())
		}
	}
}

func TestStopString(t *testing.T) {
	tok := loadTokenizer(t)
	ids := tok.Encode("Once upon a time, there was a little girl named Lily.", false)
	r := newRegion(t, 4096)
	s, _ := running(t, r, []int32{1}, uint32(len(ids)), "little girl")
	rd := generate(t, r, s, ids, shm.FinishLength, workerFactory(t, r, tok), 0)
	if s.StopMatched.Load() != 1 || !rd.final {
		t.Fatalf("stop string not matched (final %v)", rd.final)
	}
	got := rd.text()
	if !strings.HasSuffix(got, "little girl") {
		t.Errorf("text %q should end at the stop string", got)
	}
	if idx := int(s.StopMatchedIndex.Load()); idx != len(rd.pieces)-1 {
		t.Errorf("stop matched at token %d, last piece is token %d", idx, len(rd.pieces)-1)
	}
}

// TestFinishMarker: a request aborted after its tokens were queued (or
// before any) gets a token-less final piece.
func TestFinishMarker(t *testing.T) {
	tok := loadTokenizer(t)
	for _, n := range []int{0, 3} {
		r := newRegion(t, 4096)
		s, gen := running(t, r, []int32{1}, 10)
		w := workerFactory(t, r, tok)()
		rd := &reader{}
		for i := range n {
			s.SetOutput(i, 300+int32(i))
			s.Publish(uint32(i+1), shm.FinishNone)
			w.Pass()
			rd.drain(t, s)
		}
		if err := s.MarkInferReleased(gen, shm.StateRunning, shm.FinishAborted); err != nil {
			t.Fatal(err)
		}
		w.Pass()
		rd.drain(t, s)
		last := rd.pieces[len(rd.pieces)-1]
		if len(rd.pieces) != n+1 || !last.Final || last.SrcIndex != uint32(n) || len(last.Text) != 0 {
			t.Errorf("%d tokens then abort: pieces %+v", n, rd.pieces)
		}
	}
}

// TestFullTextQueue: pieces wait for room in a small queue; none is lost.
func TestFullTextQueue(t *testing.T) {
	tok := loadTokenizer(t)
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
	ids := tok.Encode(text, false)
	r := newRegion(t, 64)
	s, _ := running(t, r, []int32{1}, uint32(len(ids)))
	w := workerFactory(t, r, tok)()
	for i, id := range ids {
		s.SetOutput(i, id)
	}
	s.Publish(uint32(len(ids)), shm.FinishLength)
	rd := &reader{}
	for i := 0; i < 10*len(ids) && !rd.final; i++ {
		w.Pass()
		rd.drain(t, s)
	}
	if rd.text() != text || !rd.final {
		t.Errorf("text %q (final %v), want %q", rd.text(), rd.final, text)
	}
}

// TestPassTakesIntake: a pass tracks the slots announced on the
// detokenizer's intake ring since the last one, without waiting for the
// slot-table scan, and ignores an announcement naming an old generation, a
// free slot or an index out of range; the scan still finds a live slot
// whose announcement never came.
func TestPassTakesIntake(t *testing.T) {
	tok := loadTokenizer(t)
	r := newRegion(t, 4096)
	w := workerFactory(t, r, tok)()
	noScan := func() { w.lastScan = time.Now().Add(time.Hour) }
	for _, c := range []struct {
		name    string
		group   func(s *shm.Slot, gen uint32) []shm.SlotGen
		tracked int
	}{
		{"old generation", func(s *shm.Slot, gen uint32) []shm.SlotGen {
			return []shm.SlotGen{{Slot: uint32(s.Index), Gen: gen + 1}}
		}, 0},
		{"free slot", func(*shm.Slot, uint32) []shm.SlotGen { return []shm.SlotGen{{Slot: 3, Gen: 1}} }, 0},
		{"live slot", func(s *shm.Slot, gen uint32) []shm.SlotGen { return []shm.SlotGen{{Slot: uint32(s.Index), Gen: gen}} }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, gen := running(t, r, []int32{1}, 4)
			t.Cleanup(func() {
				s.MarkInferReleased(gen, shm.StateRunning, shm.FinishStop)
				s.DetokDone.Store(1)
				s.Release(gen)
				w.Pass()
			})
			noScan()
			if err := r.DetokIntake().Announce(c.group(s, gen)); err != nil {
				t.Fatal(err)
			}
			w.Pass()
			if w.Tracked() != c.tracked {
				t.Errorf("%d slots tracked, want %d", w.Tracked(), c.tracked)
			}
		})
	}
	if err := r.DetokIntake().Announce([]shm.SlotGen{{Slot: 99, Gen: 1}}); err == nil {
		t.Error("an announcement of slot 99 of 4 was accepted")
	}
	running(t, r, []int32{1}, 4) // never announced
	w.Pass()
	if w.Tracked() != 0 {
		t.Errorf("%d slots tracked before the scan, want 0", w.Tracked())
	}
	w.lastScan = time.Time{}
	w.Pass() // the scan finds the live slot
	if w.Tracked() != 1 {
		t.Errorf("scan tracked %d slots, want 1", w.Tracked())
	}
}

// TestHandOverPacing: with a stream interval, a stream's first token and
// its end are handed over at once and the tokens between wait for the
// interval; with none, every pass hands over what was published.
func TestHandOverPacing(t *testing.T) {
	tok := loadTokenizer(t)
	ids := tok.Encode("Once upon a time, there was a little girl", false)
	for _, tc := range []struct {
		name     string
		interval time.Duration
		want     []int // pieces queued after token i+1 was published
	}{
		{"every pass", 0, []int{1, 1, 1, 1, 1, 1}},
		{"first and last at once, the rest held", time.Hour, []int{1, 0, 0, 0, 0, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegion(t, 4096)
			outs := ids[:len(tc.want)]
			s, _ := running(t, r, []int32{1}, uint32(len(outs)))
			w, err := NewWorker(r, tok, Options{EOS: []int{2}, Log: zerolog.Nop(), StreamInterval: tc.interval})
			if err != nil {
				t.Fatal(err)
			}
			rd := &reader{}
			var got []int
			for i, id := range outs {
				s.SetOutput(i, id)
				st := shm.FinishNone
				if i == len(outs)-1 {
					st = shm.FinishLength
				}
				s.Publish(uint32(i+1), st)
				w.Pass()
				before := len(rd.pieces)
				rd.drain(t, s)
				got = append(got, len(rd.pieces)-before)
				if held := i > 0 && i < len(outs)-1 && tc.interval > 0; w.held != held {
					t.Errorf("after token %d: held %v, want %v", i+1, w.held, held)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("pieces per pass %v, want %v", got, tc.want)
			}
			if want := tok.Decode(outs, true); rd.text() != want || !rd.final {
				t.Errorf("text %q (final %v), want %q", rd.text(), rd.final, want)
			}
		})
	}
}
