package shm

import (
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"
)

// runningSlot allocates and fills a slot of r with a 5-token prompt.
func runningSlot(t *testing.T, r *Region, top uint32) (*Slot, uint32) {
	t.Helper()
	s, gen, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	q := sampleRequest()
	q.Params.TopLogprobs = int(top)
	if err := s.Fill(gen, q); err != nil {
		t.Fatal(err)
	}
	return s, gen
}

func TestOutputLogprob(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	s, _ := runningSlot(t, r, 0)
	for i, lp := range []float32{-0.5, -1.25, float32(math.Inf(-1))} {
		if err := s.SetOutput(i, int32(100+i)); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOutputLogprob(i, lp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.OutputLogprob(0); !errors.Is(err, ErrBadIndex) {
		t.Fatalf("unpublished logprob read: %v, want ErrBadIndex", err)
	}
	if err := s.Publish(3, FinishNone); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{-0.5, -1.25, float32(math.Inf(-1))} {
		if got, err := s.OutputLogprob(uint32(i)); err != nil || got != want {
			t.Errorf("logprob %d = %v, %v; want %v", i, got, err, want)
		}
	}
	if _, err := s.OutputLogprob(3); !errors.Is(err, ErrBadIndex) {
		t.Errorf("logprob past the published outputs: %v, want ErrBadIndex", err)
	}
	for _, i := range []int{-1, int(smallSizes.MaxReqTotalLen) - 5} {
		if err := s.SetOutputLogprob(i, 0); !errors.Is(err, ErrTooLong) {
			t.Errorf("SetOutputLogprob(%d): %v, want ErrTooLong", i, err)
		}
	}
}

func TestTopRing(t *testing.T) {
	sizes := smallSizes
	sizes.TopRingEntries = 4
	r := newTestRegion(t, sizes)
	s, gen := runningSlot(t, r, 3)
	if s.TopRingLen() != 4 || s.Params().TopLogprobs != 3 {
		t.Fatalf("ring %d entries, top_logprobs %d", s.TopRingLen(), s.Params().TopLogprobs)
	}
	alts := func(i int) []TopLogprob {
		return []TopLogprob{{ID: int32(i), Logprob: -0.1}, {ID: int32(i + 1), Logprob: -2}, {ID: int32(i + 2), Logprob: -3}}
	}
	var buf []TopLogprob
	for i := range 4 {
		if !s.TopRoom(i) {
			t.Fatalf("no room for entry %d of an empty ring", i)
		}
		if err := s.WriteTop(gen, i, i+1, alts(i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.TopRoom(4) {
		t.Fatal("room for entry 4 before the reader copied entry 0")
	}
	for i := range 4 {
		got, rank, ok := s.ReadTop(gen, uint32(i), buf)
		if !ok || rank != i+1 || !reflect.DeepEqual(got, alts(i)) {
			t.Fatalf("entry %d: %v rank %d ok %v", i, got, rank, ok)
		}
		buf = got
	}
	s.TopRead.Store(1)
	if !s.TopRoom(4) || s.TopRoom(5) {
		t.Fatal("TopRoom does not follow TopRead")
	}
	// Entry 4 overwrites entry 0: reading 0 now fails, as does another
	// generation, an entry never written and a truncated count.
	if err := s.WriteTop(gen, 4, 1, alts(4)[:1]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		gen  uint32
		i    uint32
	}{{"overwritten", gen, 0}, {"other generation", gen + 1, 4}, {"never written", gen, 9}} {
		if got, _, ok := s.ReadTop(c.gen, c.i, buf); ok || len(got) != 0 {
			t.Errorf("%s: read %v ok=%v", c.name, got, ok)
		}
	}
	if got, _, ok := s.ReadTop(gen, 4, buf); !ok || len(got) != 1 || got[0].ID != 4 {
		t.Errorf("entry 4: %v ok=%v", got, ok)
	}
	long := make([]TopLogprob, MaxTopLogprobs+5)
	if err := s.WriteTop(gen, 5, 1, long); err != nil {
		t.Fatal(err)
	}
	if got, _, ok := s.ReadTop(gen, 5, buf); !ok || len(got) != MaxTopLogprobs {
		t.Errorf("%d alternatives read back, want the %d kept", len(got), MaxTopLogprobs)
	}
	if err := s.WriteTop(gen, -1, 1, nil); !errors.Is(err, ErrBadIndex) {
		t.Errorf("WriteTop(-1): %v", err)
	}
	q := sampleRequest()
	q.Params.TopLogprobs = MaxTopLogprobs + 1
	s2, gen2, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Fill(gen2, q); !errors.Is(err, ErrTooLong) {
		t.Errorf("Fill with %d top logprobs: %v, want ErrTooLong", q.Params.TopLogprobs, err)
	}
}

// TestTopRingConcurrent has a writer lap the ring while a reader copies:
// every entry the reader accepts is whole (its alternatives all carry the
// index they were written for), whatever it raced with.
func TestTopRingConcurrent(t *testing.T) {
	sizes := smallSizes
	sizes.TopRingEntries = 2
	r := newTestRegion(t, sizes)
	s, gen := runningSlot(t, r, MaxTopLogprobs)
	var wg sync.WaitGroup
	done, stop := make(chan struct{}), make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		alts := make([]TopLogprob, MaxTopLogprobs)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for j := range alts {
				alts[j] = TopLogprob{ID: int32(i), Logprob: float32(-i)}
			}
			_ = s.WriteTop(gen, i, i, alts)
		}
	}()
	var buf []TopLogprob
	accepted, tries := 0, 0
	deadline := time.Now().Add(100 * time.Millisecond)
	for running := true; running; {
		if accepted >= 5000 || time.Now().After(deadline) {
			close(stop)
			<-done
			break
		}
		select {
		case <-done:
			running = false
		default:
		}
		// Chase the writer: read whatever index an entry claims right now.
		for k := range s.top {
			idx := s.top[k].Index.Load()
			if idx == 0 {
				continue
			}
			tries++
			i := idx - 1
			got, rank, ok := s.ReadTop(gen, i, buf)
			if !ok {
				continue
			}
			accepted++
			if rank != int(i) || len(got) != MaxTopLogprobs {
				t.Fatalf("entry %d: rank %d, %d alternatives", i, rank, len(got))
			}
			for _, a := range got {
				if a.ID != int32(i) || a.Logprob != float32(-int(i)) {
					t.Fatalf("entry %d torn: %+v", i, a)
				}
			}
			buf = got
		}
	}
	wg.Wait()
	t.Logf("%d of %d reads racing the writer accepted whole", accepted, tries)
}
