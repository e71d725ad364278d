package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// chaosPrompts are the 32 concurrent requests: a few story openings, each
// asked for a long greedy continuation so that the kills land mid-stream.
func chaosPrompts() []string {
	starts := []string{"Once upon a time", "Lily", "One day", "The cat", "Tom and Sue", "The sun", "A little dog", "Mom said"}
	out := make([]string, 32)
	for i := range out {
		out[i] = starts[i%len(starts)]
		if i >= len(starts) {
			out[i] += [...]string{" was", " saw", " wanted"}[i/len(starts)%3]
		}
	}
	return out
}

// chaosParams: greedy, no stop id, so each request runs to max_new_tokens.
func chaosParams() map[string]any {
	return map[string]any{"max_new_tokens": 80, "skip_special_tokens": true}
}

type outcome struct {
	text, reason string
	err          error
}

// longParams are for the fault tests that need every stream in flight at
// once: 320 tokens (the prompts are under 10; stories260K holds 512) give a
// stream admitted alone ~40x more steps than chaosParams' 80 before it can
// finish while its batch mates are still being admitted, which on a busy
// machine took longer than a whole 80-token stream (CI of stop 29: the
// SIGSTOP test; locally, quiet: the chaos kill rounds).
func longParams() map[string]any {
	return map[string]any{"max_new_tokens": 320, "skip_special_tokens": true}
}

// streamRound streams every prompt concurrently with params. When need
// streams have received at least killAfter events, during runs once (nil:
// no fault); the others may still wait in the router's queue. It returns
// the outcomes and how many streams had finished when during ran.
func streamRound(ctx context.Context, s *server, prompts []string, params map[string]any, killAfter, need int,
	during func()) ([]outcome, int) {
	out := make([]outcome, len(prompts))
	var (
		wg       sync.WaitGroup
		reached  atomic.Int32
		finished atomic.Int32
		trigger  = make(chan struct{})
		once     sync.Once
	)
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hit := false
			text, reason, err := s.stream(ctx, p, params, func(n int) {
				if !hit && n >= killAfter {
					hit = true
					if int(reached.Add(1)) == need {
						once.Do(func() { close(trigger) })
					}
				}
			})
			finished.Add(1)
			out[i] = outcome{text, reason, err}
		}()
	}
	doneAtFault := -1
	if during != nil {
		select {
		case <-trigger:
			doneAtFault = int(finished.Load())
			during()
		case <-ctx.Done():
		}
	}
	wg.Wait()
	return out, doneAtFault
}

// chaos is issue 9's test: 32 concurrent greedy streams while the router,
// infer and the detokenizer are each killed -9 mid-stream must all give
// exactly the fault-free text; killing the apiserver drops its clients and
// all slots and KV are free again within 5 s.
func chaos(ctx context.Context, t *testing.T, s *server) {
	prompts := chaosPrompts()
	start := time.Now()
	ref, _ := streamRound(ctx, s, prompts, longParams(), 0, 0, nil)
	for i, o := range ref {
		if o.err != nil || o.reason != "length" || len(o.text) < 60 {
			t.Fatalf("fault-free request %d (%q): %s, %v, %s", i, prompts[i], o.reason, o.err, describe(o.text))
		}
	}
	t.Logf("fault-free round of %d streams took %s", len(prompts), time.Since(start).Round(time.Millisecond))

	for _, role := range []string{config.RoleRouter, config.RoleInfer, config.RoleDetokenizer} {
		start := time.Now()
		var old int
		got, doneAtKill := streamRound(ctx, s, prompts, longParams(), 10, (len(prompts)+1)/2, func() { old = s.kill9(role) })
		if doneAtKill != 0 {
			t.Errorf("kill -9 %s: %d of %d streams had already finished; the kill was not mid-stream", role, doneAtKill, len(prompts))
		}
		for i, o := range got {
			if o.err != nil || o.text != ref[i].text || o.reason != ref[i].reason {
				t.Errorf("kill -9 %s: request %d (%q): %s, %v:\n got %s\nwant %s", role, i, prompts[i], o.reason, o.err,
					describe(o.text), describe(ref[i].text))
			}
		}
		s.waitRestarted(role, old, 15*time.Second)
		t.Logf("kill -9 %s mid-stream: round took %s", role, time.Since(start).Round(time.Millisecond))
	}

	// apiserver: its clients lose their connections; the new apiserver
	// frees every slot (and so all KV) within 5 s.
	var killedAt time.Time
	var old int
	got, _ := streamRound(ctx, s, prompts[:8], longParams(), 10, 4, func() {
		old = s.kill9(config.RoleAPIServer)
		killedAt = time.Now()
	})
	for i, o := range got {
		if o.err == nil && o.reason != "" {
			t.Errorf("request %d finished (%s) although its apiserver was killed", i, o.reason)
		}
	}
	for {
		slots, kv, ok := slotsInUse(s.shmDir)
		if ok && slots == 0 && kv == 0 {
			t.Logf("kill -9 apiserver: slots and KV free %s after the kill", time.Since(killedAt).Round(time.Millisecond))
			break
		}
		if time.Since(killedAt) > 5*time.Second {
			t.Fatalf("kill -9 apiserver: %d slots and %d KV tokens still in use 5 s later", slots, kv)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.waitRestarted(config.RoleAPIServer, old, 15*time.Second)
	s.waitHealthy(10 * time.Second)
	text, err := s.generate(ctx, prompts[0], longParams())
	if err != nil || text != ref[0].text {
		t.Errorf("after the apiserver restart: %v, %s, want %s", err, describe(text), describe(ref[0].text))
	}
}
