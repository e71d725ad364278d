package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// openAIStream streams a /v1/completions request, calling onChunk after
// each chunk, and returns the text and finish reason.
func openAIStream(ctx context.Context, base, key string, body map[string]any, onChunk func(n int)) (string, string, error) {
	body["stream"] = true
	j, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(j))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("/v1/completions: %s", resp.Status)
	}
	var text strings.Builder
	reason, n := "", 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return text.String(), "", fmt.Errorf("chunk %q: %w", data, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != nil {
				reason = *ch.FinishReason
			}
		}
		n++
		if onChunk != nil {
			onChunk(n)
		}
	}
	return text.String(), reason, sc.Err()
}

// testLogitBiasRestart (issue #22): a request with an OpenAI logit_bias
// gives exactly the same text when infer is killed -9 mid-stream (the new
// infer rebuilds the bias processor from the slot's extras and replays).
// It restarts infer, so it runs last on its server.
func testLogitBiasRestart(t *testing.T, s *server, key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bias := map[string]float64{}
	for id := 3; id < 512; id += 7 { // many entries; some banned, some favoured
		bias[fmt.Sprint(id)] = float64(id%5)*3 - 6
	}
	bias["400"] = -100
	body := func() map[string]any {
		return map[string]any{"prompt": "Once upon a time", "max_tokens": 120, "temperature": 0, "ignore_eos": true, "logit_bias": bias}
	}
	plain := body()
	delete(plain, "logit_bias")
	unbiased, _, err := openAIStream(ctx, s.base, key, plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, reason, err := openAIStream(ctx, s.base, key, body(), nil)
	if err != nil || reason != "length" || ref == unbiased {
		t.Fatalf("biased reference: %s, %v; equal to the unbiased text: %v", reason, err, ref == unbiased)
	}
	old := 0
	got, reason, err := openAIStream(ctx, s.base, key, body(), func(n int) {
		if n == 20 {
			old = s.kill9(config.RoleInfer)
		}
	})
	if err != nil || reason != "length" || got != ref {
		t.Errorf("kill -9 infer mid-stream: %s, %v:\n got %s\nwant %s", reason, err, describe(got), describe(ref))
	}
	if old == 0 {
		t.Fatal("the stream ended before the kill")
	}
	s.waitRestarted(config.RoleInfer, old, 15*time.Second)
}
