package infer

// Used only by tests (issue 17: kept out of the shipped binaries).

// Epoch is this process's infer epoch.
func (w *Worker) Epoch() uint32 { return w.epoch }

// Live is the number of requests the engine holds.
func (w *Worker) Live() int { return len(w.live) }
