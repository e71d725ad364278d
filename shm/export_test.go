package shm

// Used only by tests (issue 17: kept out of the shipped binaries).

// extrasFree is the pool's free bytes as the slot table names them (tests
// check that nothing leaks).
func (r *Region) extrasFree() uint64 {
	r.lockExtras()
	defer r.unlockExtras()
	var n uint64
	for _, f := range r.extras.free {
		n += f.n
	}
	return n
}
