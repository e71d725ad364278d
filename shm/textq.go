package shm

import (
	"encoding/binary"
	"fmt"
)

// The per-slot text queue is a byte ring of TextQueueBytes carrying decoded
// text pieces from the detokenizer (single producer) to the apiserver (single
// consumer). TextHead and TextTail are byte counters that only grow; the
// position in the ring is the counter modulo the capacity. A record is a
// 12-byte header (text length, source output index, flags; little-endian
// uint32s) followed by the text, and may wrap around the end of the ring.
// The producer writes the record, then publishes it by storing TextTail; the
// consumer copies it out, then frees it by storing TextHead.

// TextPiece is one decoded piece of a request's output.
type TextPiece struct {
	Text     []byte
	SrcIndex uint32 // index of the output token that completed this text
	Special  bool   // the token is a special token
	Final    bool   // last piece of the request: read FinishStatus after it
}

const (
	textFlagSpecial uint32 = 1 << iota
	textFlagFinal
)

// MaxTextPiece is the largest text one record holds in a queue of capBytes
// (the detokenizer splits longer text).
func MaxTextPiece(capBytes uint32) int { return int(capBytes) - TextRecordSize }

// PushText appends a piece (detokenizer). It returns ErrTextFull when the
// apiserver has not drained enough room yet: retry after it has, without
// advancing the decode offsets.
func (s *Slot) PushText(p TextPiece) error {
	capB := uint64(len(s.text))
	need := uint64(TextRecordSize) + uint64(len(p.Text))
	if need > capB {
		return fmt.Errorf("slot %d: %d-byte text piece, queue holds %d: %w", s.Index, len(p.Text), MaxTextPiece(uint32(capB)), ErrTooLong)
	}
	tail, head := s.TextTail.Load(), s.TextHead.Load()
	if head > tail || tail-head > capB {
		return fmt.Errorf("slot %d: text queue head %d tail %d: %w", s.Index, head, tail, ErrCorrupt)
	}
	if capB-(tail-head) < need {
		return ErrTextFull
	}
	var hdr [TextRecordSize]byte
	flags := uint32(0)
	if p.Special {
		flags |= textFlagSpecial
	}
	if p.Final {
		flags |= textFlagFinal
	}
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(p.Text)))
	binary.LittleEndian.PutUint32(hdr[4:], p.SrcIndex)
	binary.LittleEndian.PutUint32(hdr[8:], flags)
	s.ringWrite(tail, hdr[:])
	s.ringWrite(tail+TextRecordSize, p.Text)
	s.TextTail.Store(tail + need)
	return nil
}

// PopText takes the oldest piece (apiserver). The piece's Text is stored in
// buf (grown if needed), so the caller may reuse buf between calls. ok is
// false when the queue is empty. ErrCorrupt means the queue cannot be
// trusted: abort the request.
func (s *Slot) PopText(buf []byte) (p TextPiece, ok bool, err error) {
	capB := uint64(len(s.text))
	head, tail := s.TextHead.Load(), s.TextTail.Load()
	if head == tail {
		return TextPiece{}, false, nil
	}
	avail := tail - head
	if head > tail || avail > capB || avail < TextRecordSize {
		return TextPiece{}, false, fmt.Errorf("slot %d: text queue head %d tail %d: %w", s.Index, head, tail, ErrCorrupt)
	}
	var hdr [TextRecordSize]byte
	s.ringRead(head, hdr[:])
	n := uint64(binary.LittleEndian.Uint32(hdr[0:]))
	if n > avail-TextRecordSize {
		return TextPiece{}, false, fmt.Errorf("slot %d: text record of %d bytes, %d queued: %w", s.Index, n, avail, ErrCorrupt)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	s.ringRead(head+TextRecordSize, buf)
	flags := binary.LittleEndian.Uint32(hdr[8:])
	p = TextPiece{
		Text:     buf,
		SrcIndex: binary.LittleEndian.Uint32(hdr[4:]),
		Special:  flags&textFlagSpecial != 0,
		Final:    flags&textFlagFinal != 0,
	}
	s.TextHead.Store(head + TextRecordSize + n)
	return p, true, nil
}

// TextQueued is the number of bytes waiting in the queue.
func (s *Slot) TextQueued() int {
	head, tail := s.TextHead.Load(), s.TextTail.Load()
	if head > tail || tail-head > uint64(len(s.text)) {
		return 0
	}
	return int(tail - head)
}

func (s *Slot) ringWrite(pos uint64, b []byte) {
	off := int(pos % uint64(len(s.text)))
	n := copy(s.text[off:], b)
	copy(s.text, b[n:])
}

func (s *Slot) ringRead(pos uint64, b []byte) {
	off := int(pos % uint64(len(s.text)))
	n := copy(b, s.text[off:])
	copy(b[n:], s.text)
}
