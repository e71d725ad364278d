package eppproxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func newTestProxy(t *testing.T, o Options) *httptest.Server {
	t.Helper()
	o.Logger = zerolog.Nop()
	p, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(func() { srv.Close(); p.Close() })
	return srv
}

func jsonHandler(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
	io.WriteString(w, `{"echo":`+string(body)+`}`)
}

func TestProxyRoutesWherePickerSays(t *testing.T) {
	a, b := newBackend(t, jsonHandler), newBackend(t, jsonHandler)
	picker := newFakePicker(t)
	picker.decide = func(h map[string]string, body []byte) (string, []byte, []byte) {
		if strings.Contains(string(body), "to-b") {
			return b.addr, body, nil
		}
		return a.addr, body, nil
	}
	srv := newTestProxy(t, Options{PickerAddr: picker.addr})

	tests := []struct {
		name, body string
		want       *backend
	}{
		{"to a", `{"prompt":"to-a"}`, a},
		{"to b", `{"prompt":"to-b"}`, b},
		{"to a again", `{"prompt":"to-a again"}`, a},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.want.got())
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(got) != `{"echo":`+tc.body+`}` {
				t.Fatalf("status %d body %q", resp.StatusCode, got)
			}
			if served := resp.Header.Get(ServedEndpointKey); served != tc.want.addr {
				t.Errorf("served by %q, want %q", served, tc.want.addr)
			}
			if resp.Header.Get("X-Went-Into-Resp-Headers") != "true" {
				t.Error("the picker's response-header mutation was not applied")
			}
			hits := tc.want.got()
			if len(hits) != before+1 {
				t.Fatalf("backend got %d requests, want %d", len(hits), before+1)
			}
			last := hits[len(hits)-1]
			if last.header.Get("X-Picked") != "yes" || last.header.Get(DestinationEndpointKey) != tc.want.addr {
				t.Errorf("request-header mutations not forwarded: %v", last.header)
			}
		})
	}
	calls := picker.calls(len(tests))
	if len(calls) != len(tests) {
		t.Fatalf("picker saw %d calls, want %d", len(calls), len(tests))
	}
	c := calls[0]
	if c.protocolMode != [2]uint64{bodyModeFullDuplex, bodyModeFullDuplex} {
		t.Errorf("protocol_config %v, want FULL_DUPLEX_STREAMED both ways", c.protocolMode)
	}
	for _, k := range []string{":method", ":path", ":authority", "content-type", "x-request-id"} {
		if lower(c.reqHeaders, k) == "" {
			t.Errorf("picker did not get header %s: %v", k, c.reqHeaders)
		}
	}
	if c.reqHeaders[":path"] != "/v1/completions" || c.reqHeaders[":method"] != "POST" {
		t.Errorf("pseudo-headers %v", c.reqHeaders)
	}
	if c.served != a.addr || c.respHeaders[":status"] != "200" || !c.respEOS {
		t.Errorf("response phase: served %q status %q eos %v", c.served, c.respHeaders[":status"], c.respEOS)
	}
}

func TestProxyStreamsThroughPicker(t *testing.T) {
	a := newBackend(t, sseHandler(5))
	picker := newFakePicker(t)
	picker.decide = func(_ map[string]string, body []byte) (string, []byte, []byte) {
		// Rewrite the model, as the EPP does for InferenceModelRewrite.
		return a.addr, bytes.ReplaceAll(body, []byte(`"m1"`), []byte(`"m2"`)), nil
	}
	picker.rewrite = func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(`"i"`), []byte(`"n"`)) }
	srv := newTestProxy(t, Options{PickerAddr: picker.addr})

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/completions", strings.NewReader(`{"model":"m1","stream":true}`))
	req.Header.Set("X-Request-Id", "rid-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("X-Request-Id") != "rid-42" {
		t.Errorf("x-request-id %q not honoured", resp.Header.Get("X-Request-Id"))
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			events = append(events, line)
		}
	}
	if len(events) != 6 || events[0] != `data: {"n":0}` || events[5] != "data: [DONE]" {
		t.Fatalf("events %q", events)
	}
	hits := a.got()
	if len(hits) != 1 || hits[0].body != `{"model":"m2","stream":true}` {
		t.Fatalf("backend got %+v, want the rewritten body", hits)
	}
	if cl := hits[0].header.Get("Content-Length"); cl != "" && cl != "28" {
		t.Errorf("content-length %q does not match the rewritten body", cl)
	}
	calls := picker.calls(1)
	if len(calls) != 1 || !strings.Contains(string(calls[0].respBody), `data: {"i":4}`) || !calls[0].respEOS {
		t.Errorf("picker did not see the whole response: %+v", calls)
	}
}

func TestProxyFailuresAndFallbacks(t *testing.T) {
	good := newBackend(t, jsonHandler)
	dead := closedAddr(t)
	tests := []struct {
		name       string
		setup      func(p *fakePicker)
		opts       func(o *Options)
		wantStatus int
		wantBody   string
		wantServed string
	}{
		{
			name: "immediate response from the picker",
			setup: func(p *fakePicker) {
				p.decide = func(map[string]string, []byte) (string, []byte, []byte) {
					return "", nil, immediateResponse(429, "too busy")
				}
			},
			wantStatus: 429, wantBody: "too busy",
		},
		{
			name: "first endpoint refuses, second serves",
			setup: func(p *fakePicker) {
				p.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) { return dead + "," + good.addr, b, nil }
			},
			wantStatus: 200, wantServed: good.addr,
		},
		{
			name: "every endpoint refuses",
			setup: func(p *fakePicker) {
				p.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) { return dead, b, nil }
			},
			wantStatus: 502, wantBody: "upstream_unavailable",
		},
		{
			name: "picker names no endpoint",
			setup: func(p *fakePicker) {
				p.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) { return "", b, nil }
			},
			wantStatus: 502, wantBody: "no destination endpoint",
		},
		{
			name:       "picker fails the call, fail closed",
			setup:      func(p *fakePicker) { p.status = "14" },
			wantStatus: 503, wantBody: "fake failure",
		},
		{
			name:       "picker unreachable, fail closed",
			opts:       func(o *Options) { o.PickerAddr = dead },
			wantStatus: 503, wantBody: "endpoint picker unavailable",
		},
		{
			name: "picker unreachable, fail open",
			opts: func(o *Options) {
				o.PickerAddr, o.FailureMode, o.FallbackEndpoints = dead, FailOpen, []string{good.addr}
			},
			wantStatus: 200, wantServed: good.addr,
		},
		{
			name: "picker too slow",
			setup: func(p *fakePicker) {
				p.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) {
					time.Sleep(300 * time.Millisecond)
					return good.addr, b, nil
				}
			},
			opts:       func(o *Options) { o.PickTimeout = 50 * time.Millisecond },
			wantStatus: 503, wantBody: "no decision within",
		},
		{
			name:       "body over the limit",
			setup:      func(p *fakePicker) {},
			opts:       func(o *Options) { o.MaxBodyBytes = 4 },
			wantStatus: 413, wantBody: "request body exceeds",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			picker := newFakePicker(t)
			picker.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) { return good.addr, b, nil }
			if tc.setup != nil {
				tc.setup(picker)
			}
			o := Options{PickerAddr: picker.addr}
			if tc.opts != nil {
				tc.opts(&o)
			}
			srv := newTestProxy(t, o)
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("got %d %q, want %d containing %q", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if tc.wantServed != "" && resp.Header.Get(ServedEndpointKey) != tc.wantServed {
				t.Errorf("served by %q, want %q", resp.Header.Get(ServedEndpointKey), tc.wantServed)
			}
		})
	}
}

func TestProxyBodylessRequest(t *testing.T) {
	a := newBackend(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		io.WriteString(w, `{"data":[{"id":"stories"}]}`)
	})
	picker := newFakePicker(t)
	picker.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) {
		if b != nil {
			t.Error("a GET must not have a body phase")
		}
		return a.addr, nil, nil
	}
	srv := newTestProxy(t, Options{PickerAddr: picker.addr})
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"data":[{"id":"stories"}]}` {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if c := picker.calls(1); len(c) != 1 || c[0].reqHeaders[":method"] != "GET" || c[0].reqHeaders["x-request-id"] == "" {
		t.Errorf("picker calls %+v (want one GET with a generated x-request-id)", c)
	}
}

func TestServeShutsDown(t *testing.T) {
	picker := newFakePicker(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, Options{PickerAddr: picker.addr, Logger: zerolog.Nop()}, time.Second) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := map[string]Options{
		"no picker":              {},
		"picker with a path":     {PickerAddr: "127.0.0.1:9002/x"},
		"unknown failure mode":   {PickerAddr: "127.0.0.1:9002", FailureMode: "Sometimes"},
		"fail open, no fallback": {PickerAddr: "127.0.0.1:9002", FailureMode: FailOpen},
		"bad fallback":           {PickerAddr: "127.0.0.1:9002", FailureMode: FailOpen, FallbackEndpoints: []string{"nohost"}},
		"negative timeout":       {PickerAddr: "127.0.0.1:9002", PickTimeout: -time.Second},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			if p, err := New(o); err == nil {
				p.Close()
				t.Fatal("New accepted bad options")
			}
		})
	}
}

func TestProxyTLSPicker(t *testing.T) {
	a := newBackend(t, jsonHandler)
	picker := newTLSFakePicker(t)
	picker.decide = func(_ map[string]string, b []byte) (string, []byte, []byte) { return a.addr, b, nil }
	tests := []struct {
		name       string
		skipVerify bool
		want       int
	}{
		{"self-signed accepted", true, 200},
		{"self-signed refused", false, 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestProxy(t, Options{PickerAddr: picker.addr, PickerTLS: true, PickerInsecureSkipVerify: tc.skipVerify})
			resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
