package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultBaseDir is where instance directories live.
const DefaultBaseDir = "/dev/shm"

// StateFile is the name of the region file inside the instance directory.
const StateFile = "state"

var instanceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// InstanceDir returns base/lightllm-<instance>, checking the instance name so
// that it cannot escape base.
func InstanceDir(base, instance string) (string, error) {
	if !instanceRE.MatchString(instance) {
		return "", fmt.Errorf("shm: bad instance name %q: want 1-64 of [A-Za-z0-9._-], not starting with . _ -", instance)
	}
	if base == "" {
		base = DefaultBaseDir
	}
	return filepath.Join(base, "lightllm-"+instance), nil
}

// Region is one mapped instance file. Its methods are safe for concurrent
// use by goroutines; cross-process rules are in docs/locking.md. Nothing
// returned by a Region may be used after Close or Destroy.
type Region struct {
	path  string
	dir   string
	mem   []byte
	sizes Sizes

	hdr         *Header
	reqs        []Req
	slots       []Slot
	ring        *Ring
	intake      *Intake // the router's
	detokIntake *Intake

	// allocHint spreads concurrent Alloc calls over the table (process-local).
	allocHint atomic.Uint32
	// extras is the extras pool and, in the apiserver, its allocator.
	extras extrasPool
	closed atomic.Bool
	// pipes are the bells' FIFOs in this process (bellpipe_linux.go); nil
	// outside an instance directory.
	pipes *bellPipes
}

// CreateOptions configure Create.
type CreateOptions struct {
	BaseDir  string // default DefaultBaseDir
	Instance string
	Sizes    Sizes
	// Replace removes an existing region of the same instance (a stale one
	// left by a crashed launcher) instead of failing with ErrExists.
	Replace bool
	// NoReserve skips fallocate. By default the whole file is reserved up
	// front so that a full /dev/shm fails here with ErrNoSpace rather than
	// with SIGBUS in whichever role first touches an unbacked page.
	NoReserve bool
}

// Create makes and maps a new region; it is the launcher's job. The file is
// built under a temporary name and renamed into place once its header is
// complete, so Attach never sees a half-initialised file.
func Create(opts CreateOptions) (*Region, error) {
	sizes := opts.Sizes.withDefaults()
	if err := sizes.Validate(); err != nil {
		return nil, fmt.Errorf("shm create: %w", err)
	}
	lay, err := computeLayout(sizes)
	if err != nil {
		return nil, fmt.Errorf("shm create: %w", err)
	}
	dir, err := InstanceDir(opts.BaseDir, opts.Instance)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, StateFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("shm create %s: %w", dir, err)
	}
	if _, err := os.Lstat(path); err == nil && !opts.Replace {
		return nil, fmt.Errorf("shm create %s: %w", path, ErrExists)
	}
	tmp := fmt.Sprintf("%s.tmp.%d", path, os.Getpid())
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm create %s: %w", tmp, err)
	}
	defer f.Close()
	fail := func(err error) (*Region, error) {
		os.Remove(tmp)
		return nil, err
	}
	if err := f.Truncate(int64(lay.FileSize)); err != nil {
		return fail(fmt.Errorf("shm create %s: size %d: %w", tmp, lay.FileSize, err))
	}
	if !opts.NoReserve {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(lay.FileSize)); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fail(fmt.Errorf("shm create %s: need %d bytes: %w", tmp, lay.FileSize, ErrNoSpace))
			}
			if !errors.Is(err, unix.EOPNOTSUPP) {
				return fail(fmt.Errorf("shm create %s: reserve %d bytes: %w", tmp, lay.FileSize, err))
			}
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(lay.FileSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail(fmt.Errorf("shm create %s: mmap: %w", tmp, err))
	}
	h := (*Header)(unsafe.Pointer(&mem[0]))
	h.Version.Store(LayoutVersion)
	h.HeaderSize.Store(HeaderSize)
	h.FileSize.Store(lay.FileSize)
	h.Slots.Store(sizes.Slots)
	h.MaxReqTotalLen.Store(sizes.MaxReqTotalLen)
	h.TextQueueBytes.Store(sizes.TextQueueBytes)
	h.RingEntries.Store(sizes.RingEntries)
	h.SlotSize.Store(SlotSize)
	h.RingEntrySize.Store(RingEntrySize)
	h.SlotsOff.Store(lay.SlotsOff)
	h.TokensOff.Store(lay.TokensOff)
	h.TextOff.Store(lay.TextOff)
	h.RingOff.Store(lay.RingOff)
	h.IntakeOff.Store(lay.IntakeOff)
	h.DetokIntakeOff.Store(lay.DetokIntakeOff)
	h.LogprobsOff.Store(lay.LogprobsOff)
	h.TopOff.Store(lay.TopOff)
	h.TopRingEntries.Store(sizes.TopRingEntries)
	h.TopEntrySize.Store(TopEntrySize)
	h.ExtrasOff.Store(lay.ExtrasOff)
	h.ExtrasBytes.Store(sizes.ExtrasBytes)
	h.CreatedUnixNano.Store(time.Now().UnixNano())
	h.CreatorPid.Store(uint32(os.Getpid()))
	h.Magic.Store(Magic) // publish: the header is complete
	// Link fails if the name exists, so two launchers racing for one
	// instance cannot both win; Rename replaces atomically.
	place := os.Link
	if opts.Replace {
		place = os.Rename
	}
	if err := place(tmp, path); err != nil {
		unix.Munmap(mem)
		if errors.Is(err, os.ErrExist) {
			err = ErrExists
		}
		return fail(fmt.Errorf("shm create %s: %w", path, err))
	}
	os.Remove(tmp) // after Link; a no-op after Rename
	return newRegion(path, dir, mem, sizes, lay), nil
}

// Attach maps the region of an existing instance; every role but the
// launcher calls it. A missing, truncated, foreign or mismatched file is an
// error wrapping one of ErrNotFound, ErrTruncated, ErrBadMagic, ErrNotReady,
// ErrVersion, ErrLayout or ErrSize.
func Attach(baseDir, instance string) (*Region, error) {
	dir, err := InstanceDir(baseDir, instance)
	if err != nil {
		return nil, err
	}
	return AttachFile(filepath.Join(dir, StateFile))
}

// AttachFile maps the region file at path (see Attach).
func AttachFile(path string) (*Region, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("shm attach %s: %w", path, ErrNotFound)
		}
		return nil, fmt.Errorf("shm attach %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm attach %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("shm attach %s: not a regular file: %w", path, ErrBadMagic)
	}
	size := st.Size()
	if size < HeaderSize {
		return nil, fmt.Errorf("shm attach %s: %d bytes: %w", path, size, ErrTruncated)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("shm attach %s: %d bytes, over the %d limit: %w", path, size, int64(MaxFileSize), ErrSize)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm attach %s: mmap: %w", path, err)
	}
	sizes, lay, err := checkHeader((*Header)(unsafe.Pointer(&mem[0])), uint64(size))
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("shm attach %s: %w", path, err)
	}
	return newRegion(path, filepath.Dir(path), mem, sizes, lay), nil
}

// checkHeader validates everything Attach relies on before it touches any
// byte past the header, so a bad file can never make it fault or index out
// of range.
func checkHeader(h *Header, fileSize uint64) (Sizes, layout, error) {
	switch m := h.Magic.Load(); {
	case m == 0:
		return Sizes{}, layout{}, ErrNotReady
	case m != Magic:
		return Sizes{}, layout{}, fmt.Errorf("magic %#x, want %#x: %w", m, Magic, ErrBadMagic)
	}
	if v := h.Version.Load(); v != LayoutVersion {
		return Sizes{}, layout{}, fmt.Errorf("file has layout version %d, this binary uses %d (restart the instance with matching binaries): %w",
			v, LayoutVersion, ErrVersion)
	}
	if hs, ss, rs, ts := h.HeaderSize.Load(), h.SlotSize.Load(), h.RingEntrySize.Load(), h.TopEntrySize.Load(); hs != HeaderSize || ss != SlotSize || rs != RingEntrySize || ts != TopEntrySize {
		return Sizes{}, layout{}, fmt.Errorf("header/slot/entry/top entry sizes %d/%d/%d/%d, want %d/%d/%d/%d: %w",
			hs, ss, rs, ts, HeaderSize, SlotSize, RingEntrySize, TopEntrySize, ErrLayout)
	}
	s := Sizes{
		Slots:          h.Slots.Load(),
		MaxReqTotalLen: h.MaxReqTotalLen.Load(),
		TextQueueBytes: h.TextQueueBytes.Load(),
		RingEntries:    h.RingEntries.Load(),
		TopRingEntries: h.TopRingEntries.Load(),
		ExtrasBytes:    h.ExtrasBytes.Load(),
	}
	if err := s.Validate(); err != nil {
		return s, layout{}, fmt.Errorf("%v: %w", err, ErrLayout)
	}
	lay, err := computeLayout(s)
	if err != nil {
		return s, lay, fmt.Errorf("%v: %w", err, ErrLayout)
	}
	if h.SlotsOff.Load() != lay.SlotsOff || h.TokensOff.Load() != lay.TokensOff ||
		h.TextOff.Load() != lay.TextOff || h.RingOff.Load() != lay.RingOff || h.IntakeOff.Load() != lay.IntakeOff ||
		h.DetokIntakeOff.Load() != lay.DetokIntakeOff ||
		h.LogprobsOff.Load() != lay.LogprobsOff || h.TopOff.Load() != lay.TopOff || h.ExtrasOff.Load() != lay.ExtrasOff {
		return s, lay, fmt.Errorf("section offsets disagree with the sizes: %w", ErrLayout)
	}
	if fs := h.FileSize.Load(); fs != lay.FileSize || fileSize != lay.FileSize {
		return s, lay, fmt.Errorf("header says %d bytes, sizes need %d, file has %d: %w", fs, lay.FileSize, fileSize, ErrSize)
	}
	return s, lay, nil
}

func newRegion(path, dir string, mem []byte, s Sizes, l layout) *Region {
	r := &Region{path: path, dir: dir, mem: mem, sizes: s}
	r.hdr = (*Header)(unsafe.Pointer(&mem[0]))
	r.reqs = unsafe.Slice((*Req)(unsafe.Pointer(&mem[l.SlotsOff])), s.Slots)
	tokens := unsafe.Slice((*int32)(unsafe.Pointer(&mem[l.TokensOff])), uint64(s.Slots)*uint64(s.MaxReqTotalLen))
	logprobs := unsafe.Slice((*float32)(unsafe.Pointer(&mem[l.LogprobsOff])), uint64(s.Slots)*uint64(s.MaxReqTotalLen))
	text := mem[l.TextOff : l.TextOff+uint64(s.Slots)*uint64(s.TextQueueBytes)]
	top := unsafe.Slice((*TopEntry)(unsafe.Pointer(&mem[l.TopOff])), uint64(s.Slots)*uint64(s.TopRingEntries))
	r.slots = make([]Slot, s.Slots)
	for i := range r.slots {
		t0, t1 := uint64(i)*uint64(s.MaxReqTotalLen), uint64(i+1)*uint64(s.MaxReqTotalLen)
		q0, q1 := uint64(i)*uint64(s.TextQueueBytes), uint64(i+1)*uint64(s.TextQueueBytes)
		k0, k1 := uint64(i)*uint64(s.TopRingEntries), uint64(i+1)*uint64(s.TopRingEntries)
		r.slots[i] = Slot{
			Req:      &r.reqs[i],
			Index:    i,
			region:   r,
			tokens:   tokens[t0:t1:t1],
			logprobs: logprobs[t0:t1:t1],
			text:     text[q0:q1:q1],
			top:      top[k0:k1:k1],
		}
	}
	rh := (*RingHeader)(unsafe.Pointer(&mem[l.RingOff]))
	entries := unsafe.Slice((*RingEntry)(unsafe.Pointer(&mem[l.RingOff+RingHeaderSize])), s.RingEntries)
	r.pipes = newBellPipes(dir, mem)
	r.ring = &Ring{hdr: rh, entries: entries, nslots: s.Slots, pipes: r.pipes}
	intake := func(off uint64, bell *Bell) *Intake {
		return &Intake{
			hdr:     (*RingHeader)(unsafe.Pointer(&mem[off])),
			entries: unsafe.Slice((*RingEntry)(unsafe.Pointer(&mem[off+RingHeaderSize])), s.RingEntries),
			nslots:  s.Slots,
			bell:    bell,
			now:     time.Now,
		}
	}
	routerBell := r.Bell(&r.hdr.Roles[RoleRouter])
	r.intake = intake(l.IntakeOff, &routerBell)
	// No bell: a queued request gives the detokenizer nothing to do until
	// infer publishes its first token, and infer rings the detokenizer then.
	r.detokIntake = intake(l.DetokIntakeOff, nil)
	r.extras.mem = mem[l.ExtrasOff : l.ExtrasOff+uint64(s.ExtrasBytes) : l.ExtrasOff+uint64(s.ExtrasBytes)]
	return r
}

// Path is the region file.
func (r *Region) Path() string { return r.path }

// Dir is the instance directory holding the region file.
func (r *Region) Dir() string { return r.dir }

// Sizes are the dimensions the region was created with.
func (r *Region) Sizes() Sizes { return r.sizes }

// Header gives the header fields (sizes, load counters, role records).
func (r *Region) Header() *Header { return r.hdr }

// Load gives the shared load counters.
func (r *Region) Load() *Load { return &r.hdr.Load }

// NumSlots is running_max_req_size.
func (r *Region) NumSlots() int { return len(r.slots) }

// Slot returns the handle of slot i; i usually comes from a message, so a
// bad index is an error.
func (r *Region) Slot(i int) (*Slot, error) {
	if i < 0 || i >= len(r.slots) {
		return nil, fmt.Errorf("slot %d of %d: %w", i, len(r.slots), ErrBadIndex)
	}
	return &r.slots[i], nil
}

// Commands is the router→infer command ring.
func (r *Region) Commands() *Ring { return r.ring }

// Intake is the apiserver→router ring of queued groups; announcing on it
// rings the router.
func (r *Region) Intake() *Intake { return r.intake }

// DetokIntake is the apiserver→detokenizer ring of the same groups;
// announcing on it rings nobody (the detokenizer takes it at every pass,
// and infer rings it for a request's first token).
func (r *Region) DetokIntake() *Intake { return r.detokIntake }

// Close unmaps the region. The file stays for the other roles.
func (r *Region) Close() error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	r.closeExtras()
	r.pipes.close()
	if err := unix.Munmap(r.mem); err != nil {
		return fmt.Errorf("shm close %s: %w", r.path, err)
	}
	return nil
}

// Destroy unmaps the region and removes the whole instance directory (its
// sockets included); it is the launcher's last step on shutdown. A region
// attached through AttachFile outside an instance directory only loses its
// file, so Destroy can never remove an unrelated directory.
func (r *Region) Destroy() error {
	cerr := r.Close()
	target := r.dir
	if !isInstanceDir(r.dir) {
		target = r.path
	}
	if err := os.RemoveAll(target); err != nil {
		return fmt.Errorf("shm destroy %s: %w", target, err)
	}
	return cerr
}

// isInstanceDir says whether dir is an instance's directory (lightllm-*),
// which Destroy removes whole.
func isInstanceDir(dir string) bool { return strings.HasPrefix(filepath.Base(dir), "lightllm-") }
