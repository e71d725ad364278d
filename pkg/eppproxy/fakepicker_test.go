package eppproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// fakePicker is a test double of the EPP: an h2c gRPC server for the
// ext_proc Process method that follows the EPP's state machine (answer the
// request headers and body once the body is complete, echo response chunks
// as streamed body mutations) with the decision left to a function.
type fakePicker struct {
	t    *testing.T
	addr string
	srv  *http.Server

	// decide sees the request headers and body and returns the
	// destination header value and the body to forward; an immediate
	// response short-circuits. Called once per request.
	decide func(h map[string]string, body []byte) (dest string, newBody []byte, im []byte)
	// rewrite, when set, maps each response chunk before it is returned.
	rewrite func([]byte) []byte
	// status, when set, ends every call at once with this gRPC status.
	status string

	mu      sync.Mutex
	seen    []fakeCall
	started int // calls begun: a call's seq
}

// fakeCall records what one Process call carried.
type fakeCall struct {
	reqHeaders   map[string]string
	reqBody      []byte
	respHeaders  map[string]string
	respBody     []byte
	respEOS      bool
	served       string
	protocolMode [2]uint64
	seq          int // the order the call began in
}

func newFakePicker(t *testing.T) *fakePicker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	f := &fakePicker{t: t, addr: ln.Addr().String()}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), Protocols: &p}
	go f.srv.Serve(ln)
	t.Cleanup(func() { f.srv.Close() })
	return f
}

// newTLSFakePicker serves over TLS with a self-signed certificate, like the
// EPP's default --secure-serving.
func newTLSFakePicker(t *testing.T) *fakePicker {
	t.Helper()
	f := &fakePicker{t: t}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	ts.EnableHTTP2 = true
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	ts.StartTLS()
	t.Cleanup(ts.Close)
	f.addr = ts.Listener.Addr().String()
	return f
}

// calls waits (up to 5 s) for n calls to have ended and returns them all
// in the order they began; the proxy ends a call after the client's
// response is complete, so calls can end in another order than they began
// (a call of an earlier request may end after the next request's call).
func (f *fakePicker) calls(n int) []fakeCall {
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		got := append([]fakeCall(nil), f.seen...)
		f.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			slices.SortFunc(got, func(a, b fakeCall) int { return a.seq - b.seq })
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakePicker) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != processPath || r.Header.Get("Content-Type") != "application/grpc" {
		http.Error(w, "not ext_proc", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/grpc")
	if f.status != "" {
		w.Header().Set("Grpc-Status", f.status)
		w.Header().Set("Grpc-Message", "fake%20failure")
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	rc := http.NewResponseController(w)
	send := func(msg []byte) {
		var hdr [5]byte
		binary.BigEndian.PutUint32(hdr[1:], uint32(len(msg)))
		w.Write(hdr[:])
		w.Write(msg)
		rc.Flush()
	}
	var call fakeCall
	f.mu.Lock()
	call.seq = f.started
	f.started++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.seen = append(f.seen, call)
		f.mu.Unlock()
		w.Header().Set("Grpc-Status", "0")
	}()
	for {
		msg, err := readFrame(r.Body)
		if err != nil {
			return // end of stream (or the proxy cancelled)
		}
		req, err := decodeTestRequest(msg)
		if err != nil {
			f.t.Errorf("fake picker: %v", err)
			return
		}
		switch req.kind {
		case reqRequestHeaders:
			call.reqHeaders, call.protocolMode = req.headers, req.mode
			if req.eos {
				dest, _, _ := f.decide(call.reqHeaders, nil)
				send(pickHeadersResponse(dest))
			}
		case reqRequestBody:
			call.reqBody = append(call.reqBody, req.body...)
			if !req.eos {
				continue
			}
			dest, body, im := f.decide(call.reqHeaders, call.reqBody)
			if im != nil {
				send(im)
				return
			}
			send(pickHeadersResponse(dest))
			send(streamedBodyResponse(respRequestBody, body, true))
		case reqResponseHeaders:
			call.respHeaders, call.served = req.headers, req.served
			send(headersMutationResponse(respResponseHeaders, "x-went-into-resp-headers", "true"))
		case reqResponseBody:
			call.respBody = append(call.respBody, req.body...)
			call.respEOS = req.eos
			chunk := req.body
			if f.rewrite != nil {
				chunk = f.rewrite(chunk)
			}
			send(streamedBodyResponse(respResponseBody, chunk, req.eos))
		}
	}
}

func readFrame(r io.Reader) ([]byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	_, err := io.ReadFull(r, msg)
	return msg, err
}

// testRequest is a decoded ProcessingRequest (the fields the proxy sends).
type testRequest struct {
	kind    protowire.Number
	headers map[string]string
	eos     bool
	body    []byte
	served  string
	mode    [2]uint64
}

func decodeTestRequest(b []byte) (*testRequest, error) {
	req := &testRequest{}
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case reqRequestHeaders, reqResponseHeaders:
			req.kind, req.headers = num, map[string]string{}
			return walk(v, func(n protowire.Number, t protowire.Type, hv []byte, x uint64) error {
				switch {
				case n == 1 && t == protowire.BytesType:
					return walk(hv, func(_ protowire.Number, _ protowire.Type, one []byte, _ uint64) error {
						h, err := decodeHeaderValue(one)
						req.headers[h.Key] = h.Value
						return err
					})
				case n == 3 && t == protowire.VarintType:
					req.eos = x != 0
				}
				return nil
			})
		case reqRequestBody, reqResponseBody:
			req.kind = num
			return walk(v, func(n protowire.Number, t protowire.Type, bv []byte, x uint64) error {
				switch {
				case n == 1 && t == protowire.BytesType:
					req.body = append([]byte(nil), bv...)
				case n == 2 && t == protowire.VarintType:
					req.eos = x != 0
				}
				return nil
			})
		case reqMetadataContext:
			// Metadata.filter_metadata is map<string, Struct>: the same
			// entry layout as a Struct's fields, with Structs as values.
			return walkStruct(v, func(ns string, st []byte) error {
				return walkStruct(st, func(k string, val []byte) error {
					return walk(val, func(n protowire.Number, t protowire.Type, sv []byte, _ uint64) error {
						if ns == NamespaceLB && k == ServedEndpointKey && n == 3 && t == protowire.BytesType {
							req.served = string(sv)
						}
						return nil
					})
				})
			})
		case reqProtocolConfig:
			return walk(v, func(n protowire.Number, _ protowire.Type, _ []byte, x uint64) error {
				if n == 1 || n == 2 {
					req.mode[n-1] = x
				}
				return nil
			})
		}
		return nil
	})
	if err == nil && req.kind == 0 {
		err = errors.New("ProcessingRequest without a request arm")
	}
	return req, err
}

// --- ProcessingResponse builders, shaped like the EPP's ---------------------

func headerOption(k, v string) []byte {
	var hv []byte
	hv = appendStringField(hv, 1, k)
	hv = appendBytesField(hv, 3, []byte(v))
	return appendBytesField(nil, 1, hv)
}

func headersMutationResponse(arm protowire.Number, kv ...string) []byte {
	var mut []byte
	for i := 0; i+1 < len(kv); i += 2 {
		mut = appendBytesField(mut, 1, headerOption(kv[i], kv[i+1]))
	}
	common := appendBytesField(nil, 2, mut)
	return appendBytesField(nil, arm, appendBytesField(nil, 1, common))
}

func pickHeadersResponse(dest string) []byte {
	if dest == "" {
		return headersMutationResponse(respRequestHeaders, "x-picked", "none")
	}
	return headersMutationResponse(respRequestHeaders, DestinationEndpointKey, dest, "x-picked", "yes")
}

func streamedBodyResponse(arm protowire.Number, body []byte, eos bool) []byte {
	var sb []byte
	if len(body) > 0 {
		sb = appendBytesField(sb, 1, body)
	}
	if eos {
		sb = appendVarintField(sb, 2, 1)
	}
	mut := appendBytesField(nil, 3, sb)
	common := appendBytesField(nil, 3, mut)
	return appendBytesField(nil, arm, appendBytesField(nil, 1, common))
}

func immediateResponse(status int, body string) []byte {
	var im []byte
	im = appendBytesField(im, 1, appendVarintField(nil, 1, uint64(status)))
	im = appendBytesField(im, 2, appendBytesField(nil, 1, headerOption("x-picker-said", "no")))
	im = appendBytesField(im, 3, []byte(body))
	return appendBytesField(nil, respImmediateResponse, im)
}

// backend is a model-server double that records what it received.
type backend struct {
	addr string
	mu   sync.Mutex
	hits []backendHit
}

type backendHit struct {
	header http.Header
	body   string
}

func newBackend(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, body []byte)) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	b := &backend{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.hits = append(b.hits, backendHit{header: r.Header.Clone(), body: string(body)})
		b.mu.Unlock()
		handler(w, r, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

func (b *backend) got() []backendHit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]backendHit(nil), b.hits...)
}

// sseHandler streams n SSE events, flushing each, then [DONE].
func sseHandler(n int) func(w http.ResponseWriter, r *http.Request, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
		for i := range n {
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func lower(h map[string]string, k string) string { return h[strings.ToLower(k)] }
