package tensor

// arenaChunk: one mapping per this many bytes of weights.
const arenaChunk = 256 << 20

// WeightArena holds copies of weight matrices in anonymous memory advised
// for transparent huge pages (Linux, THP not "never"). Decode streams
// every matrix once per token; from the 4 KiB pages of a file mapping the
// hardware prefetchers stop at every page and each page costs a TLB walk,
// and the 1B q8_0 benchmark decoded about 12% slower than from 2 MiB pages
// (docs/performance.md). llama.cpp copies too where its kernels want
// another layout (CPU_REPACK buffers) or with --no-mmap.
//
// The copies are made once at load; the file pages they came from are
// released from this process's mapping (they stay in the page cache,
// clean and reclaimable), so resident memory does not double. Copy returns
// its argument unchanged where huge pages are unavailable, so callers need
// no fallback of their own. Close unmaps everything: no matrix made from
// a copy may be used after it.
type WeightArena struct {
	chunks [][]byte // whole mappings, for Close
	free   []byte   // unused tail of the last chunk
	copied int64
}

// Copied is the bytes copied into the arena so far.
func (a *WeightArena) Copied() int64 {
	if a == nil {
		return 0
	}
	return a.copied
}
