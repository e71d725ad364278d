package shm

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A bell's pipe: a FIFO next to the region file that a Wait parks on
// through Go's netpoller instead of sleeping in FUTEX_WAIT.
//
// Why: a goroutine in a blocking syscall keeps its P in the syscall state,
// so the runtime's sysmon thread polls every 20 µs until it takes the P
// away, hands the P to a freshly woken spinning thread that finds nothing
// to do, and is woken again when the syscall returns. Roles sleep on a
// bell once per engine step, so each step cost the detokenizer, the router
// and the apiserver's dispatcher a handful of extra thread wake-ups, and
// on a paravirtualised two-core host those wake-ups were a third of those
// roles' CPU time per token. A goroutine parked in the netpoller releases
// its P at once; the last idle thread sleeps in epoll_wait and sysmon in
// its deep sleep.
//
// The protocol stays the futex one: Ring adds to seq, then writes one byte
// to the pipe only when a pipe waiter is registered (the high half of the
// waiters word); Wait registers, drains the pipe, re-checks seq and only
// then parks, so a ring can never fall between the check and the sleep.
// Both ends open the FIFO O_RDWR: a writer never gets ENXIO or EPIPE
// (every opener counts as a reader), and a full pipe (EAGAIN) already
// holds a wake-up. Reads and writes are raw syscalls: they never block (the
// fd is non-blocking) and a raw one does not wake sysmon as a syscall
// through the scheduler would.

// pipeWaiter is one pipe waiter in a bell's waiters word; futex waiters
// count in the low 16 bits.
const pipeWaiter = 1 << 16

// bellPipe is one bell's FIFO in this process.
type bellPipe struct {
	path string
	// busy admits one waiting goroutine at a time (a read deadline belongs
	// to the file, not to the goroutine); another waiter of the same bell
	// in this process sleeps on the futex.
	busy sync.Mutex
	// closing unparks the sleeper for Close (with a past deadline).
	closing atomic.Bool

	once sync.Once
	fd   int      // O_RDWR, non-blocking; -1 when the FIFO could not be opened
	f    *os.File // fd, registered with the netpoller
	rc   syscall.RawConn
}

// open makes and opens the FIFO once; false when that failed (the bell
// then works on the futex alone).
func (p *bellPipe) open() bool {
	p.once.Do(func() {
		p.fd = -1
		if err := unix.Mkfifo(p.path, 0o600); err != nil && err != unix.EEXIST {
			return
		}
		fd, err := unix.Open(p.path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			unix.Close(fd) // not a FIFO: a poller could never park on it
			return
		}
		f := os.NewFile(uintptr(fd), p.path) // non-blocking: pollable
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			return
		}
		p.fd, p.f, p.rc = fd, f, rc
	})
	return p.fd >= 0
}

// ring writes the wake-up byte. The caller holds bellPipes.mu for reading,
// so the fd cannot be closed (and reused) under the write.
func (p *bellPipe) ring() {
	if !p.open() {
		return
	}
	one := byte(1)
	unix.RawSyscall(unix.SYS_WRITE, uintptr(p.fd), uintptr(unsafe.Pointer(&one)), 1)
}

// wait parks until seq differs from seen or d passes.
func (p *bellPipe) wait(seq *atomic.Uint32, seen uint32, d time.Duration) {
	if p.f.SetReadDeadline(time.Now().Add(d)) != nil {
		return
	}
	var buf [64]byte
	// RawConn.Read calls the function, parks until the fd is readable (or
	// the deadline) while it returns false, and calls it again; Close
	// unparks it with an error.
	_ = p.rc.Read(func(fd uintptr) bool {
		// Drain: the pipe must be empty before parking on its edge. A read
		// shorter than buf emptied it (a pipe read returns all it holds up
		// to the size asked), so the read that would only say EAGAIN is
		// skipped: one syscall less per wake-up of every waiting role
		// (each ring leaves one byte), and syscalls are what a wake-up
		// costs on a paravirtualised host.
		for {
			n, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if errno != 0 || n < uintptr(len(buf)) {
				break
			}
		}
		return seq.Load() != seen || p.closing.Load()
	})
}

// close closes the FIFO (bellPipes.close, holding busy).
func (p *bellPipe) close() {
	p.once.Do(func() { p.fd = -1 }) // never opened: it must not be later
	if p.f != nil {
		p.f.Close()
	}
	p.fd, p.f = -1, nil
}

// bellPipes are one region's bells' FIFOs in this process, by the offset of
// each bell's seq word in the mapping.
type bellPipes struct {
	dir string
	mem []byte // the region's mapping
	// mu: rings and waits hold it for reading, close for writing, so no
	// FIFO is closed (and its fd reused) under a write or a park.
	mu     sync.RWMutex
	closed bool
	byMu   sync.Mutex // guards byOff (filled under mu's read lock)
	byOff  map[uintptr]*bellPipe
}

// newBellPipes is the FIFOs of a region mapped at mem in dir. Only
// instance directories (lightllm-*) get them: Destroy removes those whole,
// while a region file elsewhere (AttachFile) loses only the file.
func newBellPipes(dir string, mem []byte) *bellPipes {
	if !isInstanceDir(dir) {
		return nil
	}
	return &bellPipes{dir: dir, mem: mem}
}

// close closes the pipes (Region.Close, before unmapping). A goroutine
// still parked on one is unparked and waited for, so it never touches the
// waiters word of an unmapped region; no ring is mid-write, as rings hold
// the read lock, and none reaches a pipe afterwards.
func (ps *bellPipes) close() {
	if ps == nil {
		return
	}
	ps.mu.Lock()
	ps.closed = true
	ps.byMu.Lock()
	pipes := ps.byOff
	ps.byOff = nil
	ps.byMu.Unlock()
	ps.mu.Unlock()
	for _, p := range pipes {
		// The sleeper checks closing after setting its own deadline, so
		// either it sees closing or this past deadline comes after its own.
		p.closing.Store(true)
		if p.f != nil {
			p.f.SetReadDeadline(time.Unix(1, 0))
		}
		p.busy.Lock()
		p.close()
		p.busy.Unlock()
	}
}

// pipeRLocked is the pipe of the bell whose seq word is seq, or nil when
// the pipes are closed or seq is not in the mapping. The caller holds mu
// for reading.
func (ps *bellPipes) pipeRLocked(seq *atomic.Uint32) *bellPipe {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(ps.mem)))
	a := uintptr(unsafe.Pointer(seq))
	if ps.closed || a < base || a >= base+uintptr(len(ps.mem)) {
		return nil
	}
	off := a - base
	ps.byMu.Lock()
	defer ps.byMu.Unlock()
	p := ps.byOff[off]
	if p == nil {
		if ps.byOff == nil {
			ps.byOff = map[uintptr]*bellPipe{}
		}
		// Named by the word's offset: every process maps the same
		// layout, so all of them find the same FIFO.
		p = &bellPipe{path: filepath.Join(ps.dir, fmt.Sprintf("bell-%x", off))}
		ps.byOff[off] = p
	}
	return p
}

// ring wakes the pipe waiters of the bell whose seq word is seq.
func (ps *bellPipes) ring(seq *atomic.Uint32) {
	if ps == nil {
		return
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	if p := ps.pipeRLocked(seq); p != nil {
		p.ring()
	}
}

// wait sleeps on the bell's pipe and reports whether the bell rang after
// seen; ok is false when it could not sleep there (no pipes, closed, or
// another goroutine of this process is parked on it), and the caller then
// sleeps on the futex. The result is read before busy is released: once
// it is, Close may unmap the region.
func (ps *bellPipes) wait(b Bell, seen uint32, d time.Duration) (rung, ok bool) {
	if ps == nil {
		return false, false
	}
	ps.mu.RLock()
	p := ps.pipeRLocked(b.seq)
	ok = p != nil && p.busy.TryLock()
	if ok && !p.open() {
		p.busy.Unlock()
		ok = false
	}
	ps.mu.RUnlock()
	if !ok {
		return false, false
	}
	defer p.busy.Unlock()
	b.waiters.Add(pipeWaiter)
	p.wait(b.seq, seen, d)
	b.waiters.Add(^uint32(pipeWaiter - 1))
	return b.seq.Load() != seen, true
}
