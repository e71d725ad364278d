package tensor

import (
	"runtime"
	"sync/atomic"
)

// Task is work split over an index range [0, n). Run is called concurrently
// on disjoint sub-ranges; worker identifies the calling worker (0 is the
// goroutine that called Pool.Run) so tasks can keep per-worker scratch.
// Passing a pointer to a long-lived task struct keeps Pool.Run allocation-free.
type Task interface {
	Run(worker, lo, hi int)
}

// Pool is a fixed set of worker goroutines that live as long as the pool,
// so a forward pass does not create goroutines. Run is not reentrant: one
// goroutine drives the pool at a time.
type Pool struct {
	threads int
	wake    []chan struct{}
	done    chan struct{}

	// The current job, published to helpers by the channel send.
	task  Task
	total int
	chunk int
	next  atomic.Int64
}

// NewPool starts a pool of threads workers (the caller's goroutine counts
// as one). threads <= 0 means GOMAXPROCS.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{threads: threads, done: make(chan struct{}, threads)}
	for i := 1; i < threads; i++ {
		ch := make(chan struct{}, 1)
		p.wake = append(p.wake, ch)
		go p.helper(i, ch)
	}
	return p
}

// Threads is the number of workers including the caller.
func (p *Pool) Threads() int { return p.threads }

func (p *Pool) helper(worker int, wake chan struct{}) {
	for range wake {
		p.work(worker)
		p.done <- struct{}{}
	}
}

func (p *Pool) work(worker int) {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.total {
			return
		}
		p.task.Run(worker, lo, min(lo+p.chunk, p.total))
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
	p.next.Store(0)
	for i := 0; i < helpers; i++ {
		p.wake[i] <- struct{}{}
	}
	p.work(0)
	for i := 0; i < helpers; i++ {
		<-p.done
	}
	p.task = nil
}

// Close stops the workers. The pool must not be used afterwards.
func (p *Pool) Close() {
	for _, ch := range p.wake {
		close(ch)
	}
	p.wake = nil
	p.threads = 1
}
