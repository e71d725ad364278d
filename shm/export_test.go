package shm

// Used only by tests (issue 17: kept out of the shipped binaries).

// extrasFree is the pool's free bytes as this process's allocator sees
// them (the apiserver; tests check that nothing leaks).
func (r *Region) extrasFree() uint64 {
	p := &r.extras
	p.mu.Lock()
	defer p.mu.Unlock()
	r.buildExtrasLocked()
	var n uint64
	for _, f := range p.free {
		n += f.n
	}
	return n
}
