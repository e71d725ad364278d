package pipeline

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
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
