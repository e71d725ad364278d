package detok

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// TestRunStopsCleanlyUnderTraffic starts and stops the detokenizer role
// many times while groups are announced on its intake ring and its bell
// rings: Run must end cleanly at any point of its loop, and unmap the region
// only after its last use.
func TestRunStopsCleanlyUnderTraffic(t *testing.T) {
	c := config.DefaultConfig()
	base := t.TempDir()
	c.Instance, c.RunDir, c.ShmDir = "t", filepath.Join(base, "run"), filepath.Join(base, "lightllm-t")
	c.ModelDir = "builtin:tiny-random"
	c.MaxTotalTokenNum, c.MaxReqTotalLen, c.RunningMaxReqSize, c.MaxWaitingReqs = 4096, 256, 4, 4
	if err := os.MkdirAll(c.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	peer, err := pipeline.OpenRegion(context.Background(), &c, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	rs, err := peer.Role(shm.RoleDetokenizer)
	if err != nil {
		t.Fatal(err)
	}
	rounds := 60
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		ctl := rolectl.NewStandalone(config.RoleDetokenizer, zerolog.Nop())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, &c, zerolog.Nop(), ctl) }()
		select {
		case <-ctl.ReadyC():
		case err := <-done:
			cancel()
			t.Fatalf("round %d: detokenizer ended before ready: %v", i, err)
		}
		stopAt := time.Duration(i%5) * time.Millisecond
		sending := make(chan struct{})
		go func() {
			defer close(sending)
			for end := time.Now().Add(stopAt + 2*time.Millisecond); time.Now().Before(end); {
				_ = peer.DetokIntake().Announce([]shm.SlotGen{{Slot: 0, Gen: 1}}) // full at times: refused
				peer.Bell(rs).Ring()
			}
		}()
		time.Sleep(stopAt)
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: %v", i, err)
		}
		<-sending
	}
}
