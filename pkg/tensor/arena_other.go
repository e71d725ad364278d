//go:build !linux

package tensor

// NewWeightArena returns nil: huge-page copies are Linux-only, and the
// matrices stay where they are.
func NewWeightArena() *WeightArena { return nil }

// Copy returns b.
func (a *WeightArena) Copy(b []byte, fileMapped bool) []byte { return b }

// Alloc returns nil.
func (a *WeightArena) Alloc(n int) []byte { return nil }

// Close does nothing.
func (a *WeightArena) Close() error { return nil }

// Release is a no-op without huge-page arenas.
func (a *WeightArena) Release(b []byte) {}
