package pipeline

// Test-only accessors (issue 17: kept out of the shipped binaries).

// Dropped is the number of messages dropped for lack of queue room.
func (s *Sender) Dropped() uint64 { return s.dropped.Load() }
