package detok

// Used only by tests (issue 17: kept out of the shipped binaries).

// Tracked is the number of slots being decoded.
func (w *Worker) Tracked() int { return len(w.slots) }
