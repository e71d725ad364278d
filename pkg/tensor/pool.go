package tensor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Task is work split over an index range [0, n). Run is called concurrently
// on disjoint sub-ranges; worker identifies the calling worker (0 is the
// goroutine that called Pool.Run) so tasks can keep per-worker scratch.
// Passing a pointer to a long-lived task struct keeps Pool.Run allocation-free.
type Task interface {
	Run(worker, lo, hi int)
}

// spinFor is how long an idle helper keeps polling for the next job
// before it parks. A forward pass hands the pool a job every few
// microseconds (a decode step of a 12-layer model runs ~60), and a parked
// helper takes 100-250 µs to run again once woken (Cond.Broadcast, a futex
// wake of its thread, the Go scheduler handing it a P: measured with
// runtime/trace on the 2-core dev VM), during which the caller works
// alone. The span that matters is between one step's last job and the
// next step's first: sampling, the server's publishing and doorbells, the
// next batch's set-up — 80-300 µs in infer. At 50 µs the helper parked in
// every decode step of a 160M model and infer's step took ~10% longer than
// bench-engine's (docs/performance.md, issue 25); 1 ms covers the span
// (llama.cpp's threads poll for milliseconds too). A helper that spins
// yields its core every 64 polls, and once the engine goes idle the
// helpers park, so an idle engine still uses no CPU.
const spinFor = time.Millisecond

// Pool is a fixed set of worker goroutines that live as long as the pool,
// so a forward pass does not create goroutines. Run is not reentrant: one
// goroutine drives the pool at a time.
type Pool struct {
	threads int
	closed  atomic.Bool // set by Close before it publishes the last job

	// Parking: a helper that polled spinFor without a new job waits on
	// cond; publish stores the job word under mu and wakes them, so no
	// wake-up is lost between a helper's last poll and its wait.
	mu     sync.Mutex
	cond   sync.Cond
	parked int // helpers waiting on cond

	// The current job: written by Run before it publishes job, read only
	// by the helpers taking part, which Run waits for before it writes
	// the next.
	task  Task
	total int
	chunk int
	// regions[w] is worker w's run of chunk indexes, front<<32 | back
	// (exclusive). A worker takes its own chunks from the front, so each
	// reads one contiguous stretch of a weight matrix and the hardware
	// prefetcher keeps streaming across its chunks (interleaving the
	// workers' chunks cost a fifth of a two-thread decode's bandwidth);
	// once its run is empty it takes the others' from the back, so a
	// worker whose core is busy elsewhere holds nobody up. runs is the
	// current job's: regions[:workers taking part].
	regions []region
	runs    []region
	job     atomic.Uint64 // generation<<jobGenShift | how many helpers (1..n) may take part
	// join admits helpers to the current job: generation<<joinGenShift |
	// joinClosed once Run has run out of chunks | helpers admitted. A
	// helper touches the job only after joining it, so Run waits for the
	// helpers that joined, never for one the OS has not run yet (another
	// process on its core): those find the job closed and skip it.
	join     atomic.Uint64
	finished atomic.Int32 // helpers of the current job done with it
}

// region is one worker's run of chunks, padded to its own cache line.
type region struct {
	fb atomic.Uint64
	_  [56]byte
}

// take removes the region's first chunk (its last when back) and returns
// it, or -1 when the region is empty.
func (r *region) take(back bool) int {
	for {
		v := r.fb.Load()
		f, b := v>>32, v&(1<<32-1)
		if f >= b {
			return -1
		}
		next, c := (f+1)<<32|b, f
		if back {
			next, c = f<<32|(b-1), b-1
		}
		if r.fb.CompareAndSwap(v, next) {
			return int(c)
		}
	}
}

const (
	joinGenShift = 20
	joinClosed   = 1 << 19
	joinCount    = joinClosed - 1
)

// jobGenShift places a job's generation above its helper count in the
// job word, so a helper reads both in one load.
const jobGenShift = 16

// NewPool starts a pool of threads workers (the caller's goroutine counts
// as one). threads <= 0 means GOMAXPROCS.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, regions: make([]region, threads)}
	p.cond.L = &p.mu
	for i := 1; i < threads; i++ {
		go p.helper(i)
	}
	return p
}

// Threads is the number of workers including the caller.
func (p *Pool) Threads() int { return p.threads }

func (p *Pool) helper(worker int) {
	var seen uint64
	for {
		j := p.await(seen)
		if p.closed.Load() {
			return
		}
		seen = j
		if worker <= int(j&(1<<jobGenShift-1)) && p.enter(j>>jobGenShift) {
			p.work(worker)
			p.finished.Add(1)
		}
	}
}

// enter admits a helper to job gen unless Run has closed it (or moved on).
func (p *Pool) enter(gen uint64) bool {
	for {
		v := p.join.Load()
		if v>>joinGenShift != gen&(1<<(64-joinGenShift)-1) || v&joinClosed != 0 {
			return false
		}
		if p.join.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// closeJoin stops admitting helpers to the current job and returns how
// many joined.
func (p *Pool) closeJoin() int32 {
	for {
		v := p.join.Load()
		if p.join.CompareAndSwap(v, v|joinClosed) {
			return int32(v & joinCount)
		}
	}
}

// await returns the first job word after seen: it polls for spinFor,
// then parks until publish wakes it.
func (p *Pool) await(seen uint64) uint64 {
	start := time.Now()
	for i := 0; ; i++ {
		if j := p.job.Load(); j != seen {
			return j
		}
		if i%64 == 63 {
			if time.Since(start) > spinFor {
				break
			}
			// With fewer Ps than workers a spinning helper would hold
			// the caller's P until the scheduler pre-empts it.
			runtime.Gosched()
			// And with fewer cores than busy threads it would hold a
			// core another process needs (the server's pipeline beside
			// infer): let it run. Run does not wait for a helper that
			// has not joined its job, so the caller carries on alone.
			osYield()
		}
	}
	p.mu.Lock()
	for p.job.Load() == seen {
		p.parked++
		p.cond.Wait()
		p.parked--
	}
	j := p.job.Load()
	p.mu.Unlock()
	return j
}

// work runs worker's own chunks, then whatever chunks the others have
// not taken yet, and returns when none is left to take.
func (p *Pool) work(worker int) {
	run := func(c int) {
		lo := c * p.chunk
		p.task.Run(worker, lo, min(lo+p.chunk, p.total))
	}
	runs := p.runs
	for c := runs[worker].take(false); c >= 0; c = runs[worker].take(false) {
		run(c)
	}
	for k := 1; k < len(runs); k++ {
		r := &runs[(worker+k)%len(runs)]
		for c := r.take(true); c >= 0; c = r.take(true) {
			run(c)
		}
	}
}

// Run calls t.Run over [0, n) split into chunks of at least grain indexes
// (chunks are handed out dynamically so a busy core does not hold the
// others back) and returns when all are done. Work of at most one grain
// runs on the caller alone.
func (p *Pool) Run(t Task, n, grain int) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	if p.threads == 1 || n <= grain {
		t.Run(0, 0, n)
		return
	}
	// About four chunks per worker balances load without much overhead.
	chunk := max(grain, (n+4*p.threads-1)/(4*p.threads))
	chunks := (n + chunk - 1) / chunk
	helpers := min(p.threads-1, chunks-1)
	p.task, p.total, p.chunk = t, n, chunk
	// The chunks split evenly into one run per worker taking part.
	workers := helpers + 1
	p.runs = p.regions[:workers]
	for w := range p.runs {
		f, b := w*chunks/workers, (w+1)*chunks/workers
		p.runs[w].fb.Store(uint64(f)<<32 | uint64(b))
	}
	p.finished.Store(0)
	p.publish(helpers)
	p.work(0)
	// Every chunk is taken: helpers not in yet will skip this job, and
	// only those that joined may still be running one.
	joined := p.closeJoin()
	for i := 0; p.finished.Load() != joined; i++ {
		if i%64 == 63 {
			// A helper pre-empted by another process must get the CPU back.
			runtime.Gosched()
		}
	}
	p.task = nil
}

// publish starts a job for helpers 1..helpers and wakes the helpers that
// parked (those not taking part see the word and return to waiting).
func (p *Pool) publish(helpers int) {
	p.mu.Lock()
	gen := p.job.Load()>>jobGenShift + 1
	p.join.Store((gen & (1<<(64-joinGenShift) - 1)) << joinGenShift)
	p.job.Store(gen<<jobGenShift | uint64(helpers))
	if p.parked > 0 {
		p.cond.Broadcast()
	}
	p.mu.Unlock()
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p.threads == 1 {
		return
	}
	p.closed.Store(true)
	p.publish(p.threads - 1)
	p.threads = 1
}
