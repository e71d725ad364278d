package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is the outcome of one HTTP generation request.
type answer struct {
	status     int
	retryAfter string
	text       string
	count      int
	reason     string
	err        error
}

// postGenerate sends one /generate and decodes what comes back, whatever
// the status.
func (s *server) postGenerate(ctx context.Context, inputs string, p map[string]any) answer {
	body, _ := json.Marshal(map[string]any{"inputs": inputs, "parameters": p})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/generate", bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), err: err}
	if err != nil || resp.StatusCode != http.StatusOK {
		a.text = string(b)
		return a
	}
	var r struct {
		GeneratedText []string `json:"generated_text"`
		FinishReason  string   `json:"finish_reason"`
		Count         int      `json:"count_output_tokens"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.GeneratedText) != 1 {
		a.err = fmt.Errorf("bad /generate answer %s (%v)", b, err)
		return a
	}
	a.text, a.reason, a.count = r.GeneratedText[0], r.FinishReason, r.Count
	return a
}

// rssBytes is a process's resident set size from /proc; 0 when it is gone.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// rssSampler records the peak RSS of each role (and the supervisor) while
// it runs.
type rssSampler struct {
	pids map[string]int
	mu   sync.Mutex
	peak map[string]int64
	stop chan struct{}
	done chan struct{}
}

func (s *server) rssPids() map[string]int {
	pids := rolePids(s.status())
	pids["supervisor"] = s.cmd.Process.Pid
	return pids
}

// sampleRSS reads every role's RSS now.
func sampleRSS(pids map[string]int) map[string]int64 {
	out := map[string]int64{}
	for role, pid := range pids {
		out[role] = rssBytes(pid)
	}
	return out
}

func startRSS(pids map[string]int, every time.Duration) *rssSampler {
	r := &rssSampler{pids: pids, peak: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			now := sampleRSS(pids)
			r.mu.Lock()
			for role, v := range now {
				r.peak[role] = max(r.peak[role], v)
			}
			r.mu.Unlock()
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
		}
	}()
	return r
}

// Stop ends sampling and returns the peaks.
func (r *rssSampler) Stop() map[string]int64 {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// floodOnce sends n concurrent /generate requests released together, and
// sorts the answers into admitted (200) and refused (429/503).
func floodOnce(ctx context.Context, t *testing.T, s *server, n, maxNew int, gold golden) (admitted, refused int) {
	t.Helper()
	answers := make([]answer, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			answers[i] = s.postGenerate(ctx, "", params(maxNew))
		}()
	}
	close(gate)
	wg.Wait()
	statuses := map[int]int{}
	for i, a := range answers {
		statuses[a.status]++
		switch {
		case a.err != nil:
			t.Errorf("request %d: %v", i, a.err)
		case a.status == http.StatusOK:
			admitted++
			// Every admitted request runs to completion with the right text.
			if a.reason != "length" || a.count != maxNew || !strings.HasPrefix(gold.TextUntilStop, a.text) || len(a.text) < maxNew {
				t.Errorf("admitted request %d: %s, %d tokens, %s; want %d tokens of the golden text",
					i, a.reason, a.count, describe(a.text), maxNew)
			}
		case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
			refused++
			if secs, err := strconv.Atoi(a.retryAfter); err != nil || secs < 1 {
				t.Errorf("request %d: %d without a valid Retry-After (%q)", i, a.status, a.retryAfter)
			}
		default:
			t.Errorf("request %d: status %d (%s); the excess must only get 429/503", i, a.status, describe(a.text))
		}
	}
	t.Logf("%d requests: statuses %v", n, statuses)
	return admitted, refused
}

// TestOverload is issue 9's load test: with 8 request slots
// (running_max_req_size 4 + max_waiting_reqs 4), two floods of 80 concurrent
// requests (10× capacity) get only 200, 429 or 503 (with Retry-After);
// every admitted request completes with the golden text; no role's memory
// grows with the flood (RSS sampled from /proc); and a client that goes
// away mid-stream has its slot and KV freed at once.
func TestOverload(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	gold := loadGolden(t, models)
	bin := buildBinaries(t)
	const running, waiting = 4, 4
	const capacity = running + waiting
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"),
		"--running_max_req_size", strconv.Itoa(running), "--max_waiting_reqs", strconv.Itoa(waiting),
		"--max_total_token_num", "2048")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Warm up every role's pools, then take the baseline.
	if a := s.postGenerate(ctx, "", params(8)); a.status != http.StatusOK {
		t.Fatalf("warm-up: %d %s %v", a.status, a.text, a.err)
	}
	pids := s.rssPids()
	base := sampleRSS(pids)

	const maxNew = 48
	var peaks []map[string]int64
	for wave := 1; wave <= 2; wave++ {
		rs := startRSS(pids, 10*time.Millisecond)
		admitted, refused := floodOnce(ctx, t, s, 10*capacity, maxNew, gold)
		peaks = append(peaks, rs.Stop())
		if admitted < capacity || refused == 0 {
			t.Errorf("wave %d: %d admitted, %d refused; want at least %d admitted and the excess refused",
				wave, admitted, refused, capacity)
		}
	}
	// Bounded memory: a flood of 10× capacity adds at most a few MiB per
	// role (goroutines and buffers of the refused connections), and a
	// second flood adds nothing more: nothing accumulates per request.
	const growth, drift = 32 << 20, 8 << 20
	roles := make([]string, 0, len(pids))
	for r := range pids {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	for _, r := range roles {
		t.Logf("RSS %-12s base %s, peak flood 1 %s, peak flood 2 %s", r, mib(base[r]), mib(peaks[0][r]), mib(peaks[1][r]))
		if base[r] == 0 {
			t.Errorf("role %s (pid %d): no RSS sample", r, pids[r])
			continue
		}
		if peaks[0][r]-base[r] > growth || peaks[1][r]-base[r] > growth {
			t.Errorf("role %s: RSS grew from %s to %s / %s under 10× load (bound %s)",
				r, mib(base[r]), mib(peaks[0][r]), mib(peaks[1][r]), mib(growth))
		}
		if peaks[1][r]-peaks[0][r] > drift {
			t.Errorf("role %s: RSS peak rose from %s to %s between two equal floods", r, mib(peaks[0][r]), mib(peaks[1][r]))
		}
	}
	if after := rolePids(s.status()); len(after) != len(pids)-1 {
		t.Errorf("roles after the floods: %v", after)
	} else {
		for r, pid := range after {
			if pids[r] != pid {
				t.Errorf("role %s was restarted under load (%d → %d)", r, pids[r], pid)
			}
		}
	}
	waitIdle(t, s, 5*time.Second)

	t.Run("disconnect", func(t *testing.T) {
		// A long stream whose client goes away after a few tokens: its
		// slot and KV are free again within a few engine steps.
		sctx, scancel := context.WithCancel(ctx)
		p := map[string]any{"max_new_tokens": 400, "ignore_eos": true}
		var busySlots int
		var busyKV int64
		_, _, err := s.stream(sctx, "", p, func(n int) {
			if n == 5 {
				busySlots, busyKV, _ = slotsInUse(s.shmDir)
				scancel()
			}
		})
		if err == nil {
			t.Fatal("the stream finished although its client went away")
		}
		if busySlots != 1 || busyKV <= 0 {
			t.Errorf("mid-stream: %d slots and %d KV tokens in use, want 1 and > 0", busySlots, busyKV)
		}
		gone := time.Now()
		waitIdle(t, s, 2*time.Second)
		t.Logf("slot and KV of a disconnected client freed %s after it went away", time.Since(gone).Round(time.Millisecond))
		// The server still serves.
		if a := s.postGenerate(ctx, "", params(8)); a.status != http.StatusOK || !strings.HasPrefix(gold.TextUntilStop, a.text) {
			t.Errorf("after the disconnect: %d %s %v", a.status, describe(a.text), a.err)
		}
	})

	t.Run("disconnect while queued", func(t *testing.T) {
		// Four long streams fill running_max_req_size; a fifth request
		// waits in the router's queue. Its client going away frees its
		// slot while the others keep running.
		rctx, rcancel := context.WithCancel(ctx)
		defer rcancel()
		p := map[string]any{"max_new_tokens": 400, "ignore_eos": true}
		var wg sync.WaitGroup
		for range running {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _ = s.stream(rctx, "", p, nil)
			}()
		}
		defer wg.Wait()
		waitSlots(t, s, running, 5*time.Second)
		qctx, qcancel := context.WithCancel(ctx)
		queued := make(chan answer, 1)
		go func() { queued <- s.postGenerate(qctx, "Lily", p) }()
		waitSlots(t, s, running+1, 5*time.Second)
		qcancel()
		if a := <-queued; a.err == nil {
			t.Errorf("the queued request answered %d although its client went away", a.status)
		}
		gone := time.Now()
		waitSlots(t, s, running, 2*time.Second)
		t.Logf("slot of a queued request freed %s after its client went away", time.Since(gone).Round(time.Millisecond))
		rcancel()
		wg.Wait()
		waitIdle(t, s, 2*time.Second)
	})
}

// waitSlots waits until exactly n request slots are in use.
func waitSlots(t *testing.T, s *server, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		slots, _, ok := slotsInUse(s.shmDir)
		if ok && slots == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slots in use after %s, want %d", slots, d, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitIdle waits until no slot is in use and no KV token is held (the
// region's counters, what /token_load reports).
func waitIdle(t *testing.T, s *server, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		slots, kv, ok := slotsInUse(s.shmDir)
		if ok && slots == 0 && kv == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slots and %d KV tokens still in use %s after the requests ended", slots, kv, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
