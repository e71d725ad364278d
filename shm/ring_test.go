package shm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestRingWraparound(t *testing.T) {
	r := newTestRegion(t, smallSizes) // 8 entries, 4 slots
	q := r.Commands()
	next := uint64(0)
	// Many laps with varying fill levels cross the end of the array often.
	for lap := range 50 {
		n := 1 + lap%q.Cap()
		for i := range n {
			c := Command{Op: OpNew, Slot: uint32(i % 4), Gen: uint32(lap), Arg: uint32(i)}
			seq, err := q.Push(c)
			if err != nil {
				t.Fatalf("lap %d push %d: %v", lap, i, err)
			}
			if seq != next+uint64(i) {
				t.Fatalf("push seq %d, want %d", seq, next+uint64(i))
			}
		}
		if q.Len() != n {
			t.Fatalf("len %d, want %d", q.Len(), n)
		}
		for i := range n {
			c, ok, err := q.Pop()
			if err != nil || !ok {
				t.Fatalf("lap %d pop %d: ok=%v err=%v", lap, i, ok, err)
			}
			want := Command{Seq: next, Op: OpNew, Slot: uint32(i % 4), Gen: uint32(lap), Arg: uint32(i)}
			if c != want {
				t.Fatalf("pop %+v, want %+v", c, want)
			}
			next++
		}
		if _, ok, _ := q.Pop(); ok {
			t.Fatal("pop from an empty ring returned a command")
		}
	}
}

func TestRingFullAndBadCommands(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Commands()
	for i := range q.Cap() {
		if _, err := q.Push(Command{Op: OpNew, Slot: uint32(i % 4)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Push(Command{Op: OpNew}); !errors.Is(err, ErrRingFull) {
		t.Fatalf("push to a full ring: %v", err)
	}
	for _, c := range []Command{{Op: 0}, {Op: numOps}, {Op: OpNew, Slot: 4}} {
		if _, err := q.Push(c); !errors.Is(err, ErrBadIndex) {
			t.Errorf("push %+v: %v, want ErrBadIndex", c, err)
		}
	}
	// PushWait blocks until the consumer makes room.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(20 * time.Millisecond)
		q.Pop()
	}()
	if _, err := q.PushWait(ctx, Command{Op: OpNew, Slot: 1}); err != nil {
		t.Fatalf("PushWait: %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	if _, err := q.PushWait(short, Command{Op: OpNew, Slot: 1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PushWait on a full ring: %v", err)
	}
}

// TestRingProducerRestart: a router killed after publishing entries but
// before storing Tail must not overwrite them when it comes back; one killed
// while filling an entry leaves nothing visible.
func TestRingProducerRestart(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Commands()
	for i := range 3 {
		q.Push(Command{Op: OpNew, Slot: uint32(i)})
	}
	// Simulate the crash: Tail rolled back, plus a half-filled entry at 3.
	q.hdr.Tail.Store(1)
	q.entries[3].Op.Store(uint32(OpNew))
	q.entries[3].Slot.Store(3)
	restarted := &Ring{hdr: q.hdr, entries: q.entries, nslots: q.nslots}
	if _, err := restarted.Push(Command{Op: OpNew, Slot: 2, Arg: 9}); err != nil {
		t.Fatal(err)
	}
	var got []Command
	for {
		c, ok, err := q.Pop()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, c)
	}
	want := []Command{{0, OpNew, 0, 0, 0}, {1, OpNew, 1, 0, 0}, {2, OpNew, 2, 0, 0}, {3, OpNew, 2, 0, 9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after producer restart got %v, want %v", got, want)
	}
}

// TestRingConsumerRestart: Head lives in shm, so a new consumer continues
// where the old one stopped.
func TestRingConsumerRestart(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Commands()
	for i := range 4 {
		q.Push(Command{Op: OpNew, Slot: uint32(i)})
	}
	q.Pop()
	q.Pop()
	restarted := &Ring{hdr: q.hdr, entries: q.entries, nslots: q.nslots}
	c, ok, err := restarted.Pop()
	if err != nil || !ok || c.Seq != 2 || c.Slot != 2 {
		t.Fatalf("restarted consumer got %+v ok=%v err=%v, want seq 2", c, ok, err)
	}
}

func TestRingCorruptEntry(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Commands()
	q.Push(Command{Op: OpNew, Slot: 1})
	q.Push(Command{Op: OpNew, Slot: 2})
	q.entries[0].Slot.Store(1 << 30) // scribbled after publishing
	if _, ok, err := q.Pop(); !ok || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt entry: ok=%v err=%v", ok, err)
	}
	if c, ok, err := q.Pop(); !ok || err != nil || c.Slot != 2 {
		t.Fatalf("entry after the corrupt one: %+v %v %v", c, ok, err)
	}
}

func TestRingPopWait(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Commands()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(20 * time.Millisecond)
		q.Push(Command{Op: OpNew, Slot: 3})
	}()
	c, err := q.PopWait(ctx)
	if err != nil || c.Slot != 3 {
		t.Fatalf("PopWait: %+v %v", c, err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := q.PopWait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PopWait on an empty ring: %v", err)
	}
}

func TestTextQueue(t *testing.T) {
	r := newTestRegion(t, smallSizes) // 128-byte queues
	s, gen, _ := r.Alloc(1)
	s.Fill(gen, sampleRequest())
	var buf []byte
	src := uint32(0)
	// Pieces of varying length cross the end of the ring many times.
	for round := range 200 {
		var pushed [][]byte
		for {
			text := bytes.Repeat([]byte{byte('a' + round%26)}, (round*7+len(pushed)*5)%40)
			err := s.PushText(TextPiece{Text: text, SrcIndex: src + uint32(len(pushed)), Special: round%2 == 0})
			if errors.Is(err, ErrTextFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			pushed = append(pushed, text)
		}
		if len(pushed) == 0 {
			t.Fatal("could not push into an empty queue")
		}
		for i, want := range pushed {
			p, ok, err := s.PopText(buf)
			if err != nil || !ok {
				t.Fatalf("round %d pop %d: ok=%v err=%v", round, i, ok, err)
			}
			if !bytes.Equal(p.Text, want) || p.SrcIndex != src+uint32(i) || p.Special != (round%2 == 0) || p.Final {
				t.Fatalf("round %d pop %d: %+v, want %q", round, i, p, want)
			}
			buf = p.Text
		}
		src += uint32(len(pushed))
		if s.TextQueued() != 0 {
			t.Fatalf("queue not empty: %d bytes", s.TextQueued())
		}
	}
	if err := s.PushText(TextPiece{Final: true, SrcIndex: 5}); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := s.PopText(nil); !ok || err != nil || !p.Final || len(p.Text) != 0 {
		t.Fatalf("final marker: %+v %v %v", p, ok, err)
	}
	if err := s.PushText(TextPiece{Text: make([]byte, MaxTextPiece(128)+1)}); !errors.Is(err, ErrTooLong) {
		t.Fatalf("oversized piece: %v", err)
	}
	if err := s.PushText(TextPiece{Text: make([]byte, MaxTextPiece(128))}); err != nil {
		t.Fatalf("largest piece: %v", err)
	}
}

func TestTextQueueCorrupt(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	s, gen, _ := r.Alloc(1)
	s.Fill(gen, sampleRequest())
	s.PushText(TextPiece{Text: []byte("hi")})
	s.text[s.TextHead.Load()%128] = 200 // the record claims 200 bytes
	if _, _, err := s.PopText(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized record: %v", err)
	}
	s.TextHead.Store(1000) // head past tail
	if _, _, err := s.PopText(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("head past tail: %v", err)
	}
	if err := s.PushText(TextPiece{Text: []byte("x")}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("push on a corrupt queue: %v", err)
	}
}
