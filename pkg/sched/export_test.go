package sched

// Used only by tests (issue 17: kept out of the shipped binaries).

// Alpha is the weight the next update will give its sample.
func (e *EMA) Alpha() float64 { return e.alpha }

// Config returns the scheduler's configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// EMA returns the output-length statistics.
func (s *Scheduler) EMA() EMA { return s.ema }

// Lookup returns a queued or running request by id, or nil.
func (s *Scheduler) Lookup(id uint64) *Request { return s.byID[id] }

// RequeueAll evicts every running request (an infer restart lost their KV):
// they are re-prefilled, prompt and generated tokens, when admitted again.
func (s *Scheduler) RequeueAll() []*Request {
	return s.Preempt(int(^uint(0) >> 1))
}
