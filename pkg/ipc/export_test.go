package ipc

// Test-only accessors (issue 17: kept out of the shipped binaries).

// TryRecv is Recv without waiting; ok is false when nothing is queued.
func (p *Puller) TryRecv() (m Message, ok bool, err error) { return tryRecvItem(p.ch, p.done) }

// Stats reports messages received and peer disconnects seen.
func (p *Puller) Stats() (received, disconnects uint64) {
	return p.received.Load(), p.disconnects.Load()
}

func tryRecvItem(ch chan item, done chan struct{}) (Message, bool, error) {
	select {
	case it := <-ch:
		return it.m, true, it.err
	default:
	}
	select {
	case <-done:
		return nil, false, ErrClosed
	default:
		return nil, false, nil
	}
}
