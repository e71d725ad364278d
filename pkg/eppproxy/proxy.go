package eppproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Failure modes, as the InferencePool's endpointPickerRef.failureMode.
const (
	FailClose = "FailClose"
	FailOpen  = "FailOpen"
)

// Options configure a Proxy.
type Options struct {
	// PickerAddr is the EPP's ext_proc address, host:port (the EPP's
	// --grpc-port, 9002 by default).
	PickerAddr string
	// PickerTLS: the EPP serves TLS (its default, --secure-serving=true).
	PickerTLS bool
	// PickerInsecureSkipVerify accepts the EPP's self-signed certificate.
	PickerInsecureSkipVerify bool
	// PickTimeout bounds the wait for the picker's decision; the EPP may
	// hold a request in its flow-control queue (60 s by default). 0 = 2 min.
	PickTimeout time.Duration
	// MaxBodyBytes caps a request body; 0 = 16 MiB.
	MaxBodyBytes int64
	// FailureMode is FailClose (default: a picker failure answers 503) or
	// FailOpen (route round-robin over FallbackEndpoints and skip response
	// processing).
	FailureMode       string
	FallbackEndpoints []string
	// Upstream carries requests to the model servers; nil = a transport
	// without response timeouts (generations are long) or compression.
	Upstream http.RoundTripper
	Logger   zerolog.Logger
}

// Proxy is an http.Handler; see the package documentation.
type Proxy struct {
	o        Options
	dialer   *Dialer
	upstream http.RoundTripper
	log      zerolog.Logger
	rr       atomic.Uint64
}

// New checks o and returns a Proxy.
func New(o Options) (*Proxy, error) {
	if o.PickTimeout == 0 {
		o.PickTimeout = 2 * time.Minute
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 16 << 20
	}
	switch o.FailureMode {
	case "":
		o.FailureMode = FailClose
	case FailClose:
	case FailOpen:
		if len(o.FallbackEndpoints) == 0 {
			return nil, errors.New("eppproxy: FailOpen needs fallback endpoints")
		}
		if _, err := destinations([]HeaderOption{{Header: Header{DestinationEndpointKey, joinComma(o.FallbackEndpoints)}}}, nil); err != nil {
			return nil, fmt.Errorf("eppproxy: fallback endpoints: %w", err)
		}
	default:
		return nil, fmt.Errorf("eppproxy: failure mode %q: want %s or %s", o.FailureMode, FailClose, FailOpen)
	}
	if o.PickTimeout < 0 || o.MaxBodyBytes < 0 {
		return nil, errors.New("eppproxy: negative pick timeout or body limit")
	}
	d, err := NewDialer(o.PickerAddr, o.PickerTLS, o.PickerInsecureSkipVerify)
	if err != nil {
		return nil, err
	}
	up := o.Upstream
	if up == nil {
		up = &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
	}
	return &Proxy{o: o, dialer: d, upstream: up, log: o.Logger.With().Str("component", "eppproxy").Logger()}, nil
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}

// Close releases idle connections to the picker.
func (p *Proxy) Close() { p.dialer.Close() }

// ServeHTTP routes one request through the picker.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Header.Get("X-Request-Id") == "" {
		r.Header.Set("X-Request-Id", newRequestID())
	}
	log := p.log.With().Str("request_id", r.Header.Get("X-Request-Id")).Str("path", r.URL.Path).Logger()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, p.o.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("request body exceeds %d bytes", p.o.MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "bad_request", "reading request body: "+err.Error())
		return
	}

	s := p.dialer.Open(r.Context())
	defer finish(s)
	d, im, err := p.pick(s, r, body)
	switch {
	case im != nil:
		writeImmediate(w, im)
		log.Debug().Int("status", im.Status).Msg("picker answered the request itself")
		return
	case err != nil && errors.Is(err, ErrPicker) && p.o.FailureMode == FailOpen:
		log.Warn().Err(err).Msg("picker failed; failing open")
		s.Close()
		s = nil
		d = &decision{endpoints: []string{p.o.FallbackEndpoints[p.rr.Add(1)%uint64(len(p.o.FallbackEndpoints))]}, header: endToEnd(r.Header), body: body}
	case err != nil:
		log.Warn().Err(err).Msg("no route")
		status := http.StatusServiceUnavailable
		if errors.Is(err, ErrProtocol) || errors.Is(err, ErrNoDestination) {
			status = http.StatusBadGateway
		}
		writeError(w, status, "no_route", err.Error())
		return
	}

	resp, served, err := p.forward(r, d)
	if err != nil {
		log.Warn().Err(err).Strs("endpoints", d.endpoints).Msg("upstream failed")
		writeError(w, http.StatusBadGateway, "upstream_unavailable", err.Error())
		return
	}
	defer resp.Body.Close()
	if s == nil {
		passThrough(w, resp, served)
	} else if err := p.respond(w, s, resp, served); err != nil {
		log.Warn().Err(err).Str("endpoint", served).Msg("response processing failed")
		if !errors.Is(err, errHeadersWritten) {
			writeError(w, http.StatusBadGateway, "picker_failed", err.Error())
			return
		}
		// The status line is out: the only way left to signal failure
		// is to cut the response short, as Envoy resets the stream.
		panic(http.ErrAbortHandler)
	}
	log.Debug().Str("endpoint", served).Int("status", resp.StatusCode).Stringer("took", time.Since(start)).Msg("proxied")
}

// finish ends a Process call the way Envoy does, with a half-close, and
// lets the picker return its status; in the background, since the client's
// response is complete. A picker that does not end the call within 5 s is
// cut off.
func finish(s *Stream) {
	_ = s.CloseSend()
	go func() {
		t := time.AfterFunc(5*time.Second, s.Close)
		defer t.Stop()
		for {
			if _, err := s.Recv(); err != nil {
				break
			}
		}
		s.Close()
	}()
}

// decision is the picker's answer for the request phase.
type decision struct {
	endpoints []string
	header    http.Header
	body      []byte
}

// pick runs the request phase: it sends the headers and body and collects
// the header mutations, the destination and the body the picker returns.
func (p *Proxy) pick(s *Stream, r *http.Request, body []byte) (*decision, *Immediate, error) {
	var timedOut atomic.Bool
	timer := time.AfterFunc(p.o.PickTimeout, func() { timedOut.Store(true); s.Close() })
	defer timer.Stop()

	noBody := len(body) == 0
	sent := make(chan error, 1)
	go func() {
		err := s.Send(EncodeRequestHeaders(requestHeaders(r, len(body)), noBody))
		for off := 0; err == nil && off < len(body); {
			n := min(len(body)-off, 62000) // the EPP's own chunk size
			err = s.Send(EncodeRequestBody(body[off:off+n], off+n == len(body)))
			off += n
		}
		sent <- err
	}()

	d := &decision{header: endToEnd(r.Header)}
	headersDone, bodyDone := false, noBody
	for !headersDone || !bodyDone {
		msg, err := s.Recv()
		if err != nil {
			if timedOut.Load() {
				return nil, nil, fmt.Errorf("%w: no decision within %s", ErrPicker, p.o.PickTimeout)
			}
			return nil, nil, fmt.Errorf("%w: %w", ErrPicker, err)
		}
		resp, err := DecodeResponse(msg)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		m := resp.Mutation
		switch resp.Kind {
		case KindImmediate:
			return nil, resp.Immediate, nil
		case KindRequestHeaders:
			headersDone = true
			applyMutation(d.header, m.SetHeaders, m.RemoveHeaders)
			eps, err := destinations(m.SetHeaders, resp.Metadata)
			if err != nil {
				return nil, nil, err
			}
			d.endpoints = eps
		case KindRequestBody:
			applyMutation(d.header, m.SetHeaders, m.RemoveHeaders)
			switch {
			case m.Streamed:
				d.body = append(d.body, m.StreamedBody...)
				bodyDone = m.StreamedEOS
			default:
				return nil, nil, fmt.Errorf("%w: request body answer without streamed_response", ErrProtocol)
			}
		case KindRequestTrailers:
		default:
			return nil, nil, fmt.Errorf("%w: %s before the request was routed", ErrProtocol, resp.Kind)
		}
	}
	if err := <-sent; err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrPicker, err)
	}
	return d, nil, nil
}

// forward sends the request to the first endpoint that accepts a
// connection; only connection failures move on to the next one, since a
// request that reached a server may have run.
func (p *Proxy) forward(r *http.Request, d *decision) (*http.Response, string, error) {
	var errs []error
	for _, ep := range d.endpoints {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+ep+r.URL.RequestURI(), bytes.NewReader(d.body))
		if err != nil {
			return nil, "", fmt.Errorf("upstream request to %s: %w", ep, err)
		}
		req.Header = d.header.Clone()
		req.Host = r.Host
		req.ContentLength = int64(len(d.body))
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			req.Header.Add("X-Forwarded-For", host)
		}
		resp, err := p.upstream.RoundTrip(req)
		if err == nil {
			return resp, ep, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" {
			break
		}
	}
	return nil, "", fmt.Errorf("forward: %w", errors.Join(errs...))
}

var errHeadersWritten = errors.New("response headers already sent")

// respond runs the response phase through the picker.
func (p *Proxy) respond(w http.ResponseWriter, s *Stream, resp *http.Response, served string) error {
	noBody := resp.ContentLength == 0
	if err := s.Send(EncodeResponseHeaders(responseHeaders(resp), noBody, served)); err != nil {
		return fmt.Errorf("%w: %w", ErrPicker, err)
	}
	header := endToEnd(resp.Header)
	for done := false; !done; {
		msg, err := s.Recv()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrPicker, err)
		}
		r, err := DecodeResponse(msg)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrProtocol, err)
		}
		switch r.Kind {
		case KindImmediate:
			writeImmediate(w, r.Immediate)
			return nil
		case KindResponseHeaders:
			applyMutation(header, r.Mutation.SetHeaders, r.Mutation.RemoveHeaders)
			done = true
		default:
			return fmt.Errorf("%w: %s while waiting for the response headers answer", ErrProtocol, r.Kind)
		}
	}
	// The picker may rewrite the body, so its length is not known here.
	header.Del("Content-Length")
	header.Set(ServedEndpointKey, served)
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if noBody {
		return nil
	}

	pumped := make(chan error, 1)
	go func() { pumped <- pumpBody(s, resp.Body) }()
	rc := http.NewResponseController(w)
	for {
		msg, err := s.Recv()
		if err != nil {
			return fmt.Errorf("%w: %w: %w", errHeadersWritten, ErrPicker, err)
		}
		r, err := DecodeResponse(msg)
		if err != nil {
			return fmt.Errorf("%w: %w: %w", errHeadersWritten, ErrProtocol, err)
		}
		switch {
		case r.Kind == KindResponseBody && r.Mutation.Streamed:
			if len(r.Mutation.StreamedBody) > 0 {
				if _, err := w.Write(r.Mutation.StreamedBody); err != nil {
					return nil // the client left; closing the stream tells the picker
				}
				_ = rc.Flush()
			}
			if r.Mutation.StreamedEOS {
				if err := <-pumped; err != nil {
					return fmt.Errorf("%w: %w", errHeadersWritten, err)
				}
				return nil
			}
		case r.Kind == KindResponseTrailers:
		default:
			return fmt.Errorf("%w: %w: %s (streamed=%v) during the response body", errHeadersWritten, ErrProtocol, r.Kind, r.Mutation.Streamed)
		}
	}
}

// pumpBody sends the upstream body to the picker chunk by chunk as it
// arrives (SSE events are not held back), then an empty end-of-stream.
func pumpBody(s *Stream, body io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if serr := s.Send(EncodeResponseBody(buf[:n], false)); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) {
			return s.Send(EncodeResponseBody(nil, true))
		}
		if err != nil {
			return fmt.Errorf("upstream body: %w", err)
		}
	}
}

// passThrough copies a response unprocessed (fail-open).
func passThrough(w http.ResponseWriter, resp *http.Response, served string) {
	for k, v := range endToEnd(resp.Header) {
		w.Header()[k] = v
	}
	w.Header().Set(ServedEndpointKey, served)
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

func writeImmediate(w http.ResponseWriter, im *Immediate) {
	status := im.Status
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError
	}
	applyMutation(w.Header(), im.SetHeaders, nil)
	w.WriteHeader(status)
	_, _ = w.Write(im.Body)
}

// writeError answers in the OpenAI error shape the model servers use.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": http.StatusText(status), "code": code,
	}})
}

// Serve runs the proxy on ln until ctx ends, then shuts down gracefully
// (in-flight requests get up to grace to finish).
func Serve(ctx context.Context, ln net.Listener, o Options, grace time.Duration) error {
	p, err := New(o)
	if err != nil {
		return err
	}
	defer p.Close()
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	p.log.Info().Str("listen", ln.Addr().String()).Str("picker", o.PickerAddr).Str("failure_mode", p.o.FailureMode).Msg("epp proxy serving")
	select {
	case err := <-errc:
		return fmt.Errorf("eppproxy serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("eppproxy shutdown: %w", err)
	}
	return nil
}
