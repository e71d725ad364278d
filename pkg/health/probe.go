package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// ProbeHeader marks the probe's requests, so the apiserver can keep them
// out of request metrics (LightLLM gave its probe a negative request id).
// It is apiserver.HealthProbeHeader, spelled out here so that the health
// binary does not link the HTTP layer; test/e2e checks the two agree.
const ProbeHeader = "X-Lightllm-Health-Probe"

// HTTPProbe is the active check: a real generation of one token through
// the whole pipeline (apiserver → router → infer → detokenizer → apiserver).
type HTTPProbe struct {
	URL    string // http://host:port/generate
	Prompt string // default "Hello"
	// Key is sent as a bearer token when the API requires one (--api_key).
	Key    string
	Client *http.Client
}

// NewHTTPProbe probes the instance's own API port. A wildcard bind address
// is probed on loopback.
func NewHTTPProbe(cfg *config.Config) *HTTPProbe {
	host := cfg.Host
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	// A new connection per probe: the apiserver closes a keep-alive
	// connection idle for 10 s (apiserver.Options.IdleTimeout), the
	// probe's default interval, and a POST sent on one it is closing fails
	// with EOF (net/http retries only idempotent requests): an unhealthy
	// apiserver every few minutes in the log. A loopback connect per
	// interval costs nothing, and the apiserver's accept path is part of
	// what the probe checks.
	p := &HTTPProbe{URL: "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.Port)) + "/generate",
		Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	if keys := cfg.APIKeys(); len(keys) > 0 {
		p.Key = keys[0]
	}
	return p
}

// Probe sends the request and waits for the answer (the context bounds
// it). The error is a *ProbeError naming the role at fault: the apiserver
// when it cannot be reached or rejects the request, infer when the request
// was accepted but no answer came (LightLLM's wedged engine); an overloaded
// or draining server (429/503) is only degraded.
func (p *HTTPProbe) Probe(ctx context.Context) error {
	prompt := p.Prompt
	if prompt == "" {
		prompt = "Hello"
	}
	body, _ := json.Marshal(map[string]any{
		"inputs":     prompt,
		"parameters": map[string]any{"max_new_tokens": 1, "do_sample": false},
	})
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return &ProbeError{Target: config.RoleAPIServer, Status: Unhealthy, Err: fmt.Errorf("probe %s: %w", p.URL, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ProbeHeader, "1")
	if p.Key != "" {
		req.Header.Set("Authorization", "Bearer "+p.Key)
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		target := config.RoleAPIServer
		if connected.Load() && errors.Is(err, context.DeadlineExceeded) {
			target = config.RoleInfer // accepted, never answered
		}
		return &ProbeError{Target: target, Status: Unhealthy, Err: fmt.Errorf("probe %s: %w", p.URL, err)}
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return &ProbeError{Target: config.RoleInfer, Status: Unhealthy, Err: fmt.Errorf("probe %s: read answer: %w", p.URL, err)}
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return &ProbeError{Target: config.RoleAPIServer, Status: Degraded, Err: fmt.Errorf("probe %s: %s (overloaded or draining)", p.URL, resp.Status)}
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusExpectationFailed:
		// LightLLM answers 417 for an exception in generation.
		return &ProbeError{Target: config.RoleInfer, Status: Unhealthy, Err: fmt.Errorf("probe %s: %s: %s", p.URL, resp.Status, snippet(msg))}
	case resp.StatusCode != http.StatusOK:
		return &ProbeError{Target: config.RoleAPIServer, Status: Unhealthy, Err: fmt.Errorf("probe %s: %s: %s", p.URL, resp.Status, snippet(msg))}
	}
	var out struct {
		GeneratedText []string `json:"generated_text"`
		FinishReason  any      `json:"finish_reason"`
	}
	if err := json.Unmarshal(msg, &out); err != nil || out.GeneratedText == nil {
		return &ProbeError{Target: config.RoleAPIServer, Status: Unhealthy, Err: fmt.Errorf("probe %s: not a generate answer: %s", p.URL, snippet(msg))}
	}
	if fr, _ := out.FinishReason.(string); fr == "error" || fr == "abort" {
		return &ProbeError{Target: config.RoleInfer, Status: Unhealthy, Err: fmt.Errorf("probe %s: finish reason %q", p.URL, fr)}
	}
	return nil
}

func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
