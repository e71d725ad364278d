package sched

// deque is the waiting queue: FIFO, with evicted requests put back at the
// head so that they resume before newer ones.
type deque struct {
	buf  []*Request
	head int
}

func (q *deque) len() int { return len(q.buf) - q.head }

func (q *deque) at(i int) *Request { return q.buf[q.head+i] }

func (q *deque) pushBack(r *Request) { q.buf = append(q.buf, r) }

// pushFront puts rs, in order, before the current head.
func (q *deque) pushFront(rs []*Request) {
	if len(rs) <= q.head {
		q.head -= len(rs)
		copy(q.buf[q.head:], rs)
		return
	}
	nb := make([]*Request, 0, len(rs)+q.len()+16)
	nb = append(nb, rs...)
	nb = append(nb, q.buf[q.head:]...)
	q.buf, q.head = nb, 0
}

// popFront removes the first n requests.
func (q *deque) popFront(n int) {
	clear(q.buf[q.head : q.head+n])
	q.head += n
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.buf) {
		m := copy(q.buf, q.buf[q.head:])
		clear(q.buf[m:])
		q.buf, q.head = q.buf[:m], 0
	}
}

// remove deletes r wherever it is (aborts are rare, so linear is fine).
func (q *deque) remove(r *Request) bool {
	for i := q.head; i < len(q.buf); i++ {
		if q.buf[i] == r {
			copy(q.buf[i:], q.buf[i+1:])
			q.buf[len(q.buf)-1] = nil
			q.buf = q.buf[:len(q.buf)-1]
			return true
		}
	}
	return false
}
