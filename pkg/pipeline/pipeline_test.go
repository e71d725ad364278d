package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/ipc"
	"github.com/lightllm-go/lightllm/shm"
)

func testConfig(t *testing.T) *config.Config {
	t.Helper()
	c := config.DefaultConfig()
	base := t.TempDir()
	c.Instance, c.RunDir, c.ShmDir = "p", filepath.Join(base, "run"), filepath.Join(base, "lightllm-p")
	c.MaxReqTotalLen, c.RunningMaxReqSize, c.MaxWaitingReqs = 128, 8, 24
	return &c
}

func TestSizes(t *testing.T) {
	c := config.DefaultConfig()
	cases := []struct {
		running, waiting, maxLen int
		slots                    uint32
	}{
		{256, 1024, 512, 1280},
		{8, 0, 512, 8},
		{256, 1024, 1 << 20, 256}, // the running part fits whatever the budget says
		{16, 1024, 1 << 22, 31},   // the waiting part shrinks to what 1 GiB holds (8 B a token + queues)
		{512, 0, 1 << 22, 512},    // the running part never shrinks
	}
	for _, k := range cases {
		c.RunningMaxReqSize, c.MaxWaitingReqs, c.MaxReqTotalLen = k.running, k.waiting, k.maxLen
		s := Sizes(&c)
		if s.Slots != k.slots {
			t.Errorf("%+v: %d slots, want %d", k, s.Slots, k.slots)
		}
		if s.MaxReqTotalLen != uint32(k.maxLen) {
			t.Errorf("%+v: max_req_total_len %d", k, s.MaxReqTotalLen)
		}
	}
}

func TestOpenRegion(t *testing.T) {
	c := testConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := OpenRegion(ctx, c, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("attach without a region: %v, want a timeout", err)
	}
	done := make(chan *shm.Region, 1)
	go func() { // a role that waits for the creator
		r, err := OpenRegion(context.Background(), c, false)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(20 * time.Millisecond)
	r, err := OpenRegion(context.Background(), c, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Destroy()
	if r.NumSlots() != 32 {
		t.Errorf("%d slots, want 8+24", r.NumSlots())
	}
	w := <-done
	if w == nil || w.NumSlots() != 32 {
		t.Fatal("the waiting role did not attach")
	}
	w.Close()
	again, err := OpenRegion(context.Background(), c, true) // the creator restarted
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	other := *c
	other.RunningMaxReqSize = 4
	if _, err := OpenRegion(context.Background(), &other, true); err == nil {
		t.Error("a region of other dimensions was attached")
	}
	odd := *c
	odd.ShmDir = filepath.Join(t.TempDir(), "elsewhere")
	if _, err := OpenRegion(context.Background(), &odd, true); err == nil {
		t.Error("created a region in a dir not named lightllm-<instance>")
	}
}

// TestSender: messages queued before the peer binds are delivered once it
// does, in order, without the caller blocking.
func TestSender(t *testing.T) {
	ep := "ipc://" + filepath.Join(t.TempDir(), "x.sock")
	s, err := NewSender(ep, 16, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for i := range 5 {
		s.Send(&ipc.NewGroup{GroupID: uint64(i), Slots: []ipc.SlotRef{{Index: 1, Gen: 1}}})
	}
	if time.Since(start) > 100*time.Millisecond {
		t.Error("Send blocked with no peer")
	}
	time.Sleep(30 * time.Millisecond)
	p, err := ipc.NewPuller(ep, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 5 {
		m, err := p.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g := m.(*ipc.NewGroup); g.GroupID != uint64(i) {
			t.Fatalf("message %d is group %d", i, g.GroupID)
		}
	}
	if s.Dropped() != 0 {
		t.Errorf("%d dropped", s.Dropped())
	}
}
