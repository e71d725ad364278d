package tensor

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePage = 2 << 20

// NewWeightArena returns an arena, or nil (copies disabled) when the kernel
// will not give huge pages to anonymous memory that asks for them.
func NewWeightArena() *WeightArena {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(b, []byte("[never]")) {
		return nil
	}
	return &WeightArena{}
}

// Copy returns a copy of b in huge-page memory, 64-byte aligned, or b
// itself when a is nil or memory for the copy cannot be mapped. With
// fileMapped (b lies in a read-only file mapping and nothing else will
// read it through that mapping) b's pages are dropped from this process
// after the copy.
func (a *WeightArena) Copy(b []byte, fileMapped bool) []byte {
	if len(b) == 0 {
		return b
	}
	dst := a.Alloc(len(b))
	if dst == nil {
		return b
	}
	parallelCopy(dst, b)
	a.copied += int64(len(b))
	if fileMapped {
		release(b)
	}
	return dst
}

// Release drops b's pages from this process (a no-op when a is nil); b
// must lie in a read-only file mapping (see Copy): its data stays in the
// page cache and is read back if used again.
func (a *WeightArena) Release(b []byte) {
	if a != nil && len(b) > 0 {
		release(b)
	}
}

// Alloc returns n zeroed bytes of huge-page memory, 64-byte aligned, or
// nil when a is nil or the memory cannot be mapped.
func (a *WeightArena) Alloc(n int) []byte {
	if a == nil || n <= 0 {
		return nil
	}
	padded := (n + 63) &^ 63
	if len(a.free) < padded {
		size := max(arenaChunk, (padded+hugePage-1)&^(hugePage-1))
		mem, err := unix.Mmap(-1, 0, size+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil
		}
		a.chunks = append(a.chunks, mem)
		off := int((hugePage - uintptr(unsafe.Pointer(&mem[0]))%hugePage) % hugePage)
		a.free = mem[off : off+size]
		_ = unix.Madvise(a.free, unix.MADV_HUGEPAGE) // best effort
	}
	dst := a.free[:n:n]
	a.free = a.free[padded:]
	return dst
}

// parallelCopy copies src to dst on every core, in pieces of whole huge
// pages: the time goes to faulting in the source's file pages and the
// destination's huge pages, which the kernel does per faulting thread.
func parallelCopy(dst, src []byte) {
	const piece = 16 << 20
	workers := min(runtime.GOMAXPROCS(0), (len(src)+piece-1)/piece)
	if workers <= 1 {
		prefault(src)
		copy(dst, src)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(piece)) - piece
				if lo >= len(src) {
					return
				}
				hi := min(lo+piece, len(src))
				prefault(src[lo:hi])
				copy(dst[lo:hi], src[lo:hi])
			}
		}()
	}
	wg.Wait()
}

// Close unmaps the arena's memory.
func (a *WeightArena) Close() error {
	if a == nil {
		return nil
	}
	var errs []error
	for _, c := range a.chunks {
		errs = append(errs, unix.Munmap(c))
	}
	a.chunks, a.free = nil, nil
	return errors.Join(errs...)
}

// release drops the whole pages inside b, which must lie in a read-only
// file mapping, from this process (MADV_DONTNEED): the data stays in the
// page cache and is faulted back in if read again. On anonymous memory
// this would zero it, hence the caller's promise. Best effort.
func release(b []byte) {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_DONTNEED)
}
