package infer

import (
	"time"

	"github.com/lightllm-go/lightllm/pkg/engine"
)

// topWaitBudget is how long, in total per request, infer waits for the
// apiserver to copy top-logprob entries out of a full ring before it
// overwrites them (docs/FORMAT.md): a stalled apiserver costs the other
// requests at most this much once.
const topWaitBudget = 200 * time.Millisecond

// writeLogprobs stores output o's log-probability at l's next output index
// and, when the request asked for alternatives (the engine then computed
// o.Top from the row o.Token was drawn from), its top entry; both before
// the Publish covering it.
func (w *Worker) writeLogprobs(l *liveReq, o engine.Output) {
	s := l.slot
	if err := s.SetOutputLogprob(l.out, o.LogProb); err != nil {
		w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("logprob")
	}
	if o.Top == nil {
		return
	}
	for !s.TopRoom(l.out) && l.topWaited < topWaitBudget && s.Abort.Load() == 0 {
		w.region.Bell(w.api).Ring()
		time.Sleep(time.Millisecond)
		l.topWaited += time.Millisecond
	}
	if err := s.WriteTop(l.gen, l.out, o.Rank, o.Top); err != nil {
		w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("top logprobs")
		return
	}
	w.ringAPI = true
}
