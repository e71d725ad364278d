package eppproxy

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// processPath is the gRPC method of the ext_proc service.
const processPath = "/envoy.service.ext_proc.v3.ExternalProcessor/Process"

// maxMessageBytes bounds one gRPC message from the picker (grpc-go's default
// receive limit is 4 MiB; the EPP chunks bodies at 62,000 bytes).
const maxMessageBytes = 16 << 20

// Dialer opens ext_proc streams over HTTP/2: gRPC is length-prefixed
// protobuf messages in a POST body plus a grpc-status trailer, which
// net/http speaks without grpc-go (see doc.go for why).
type Dialer struct {
	base   string // scheme://host:port
	client *http.Client
}

// NewDialer returns a Dialer for the picker at addr (host:port). With
// useTLS the connection is TLS with ALPN h2 (the EPP's default
// --secure-serving, a self-signed certificate unless --cert-path is given,
// hence insecureSkipVerify); otherwise it is HTTP/2 cleartext (h2c, the
// EPP with --secure-serving=false).
func NewDialer(addr string, useTLS, insecureSkipVerify bool) (*Dialer, error) {
	if addr == "" {
		return nil, errors.New("ext_proc dialer: empty picker address")
	}
	scheme := "http"
	if useTLS {
		scheme = "https"
	}
	u, err := url.Parse(scheme + "://" + addr)
	if err != nil || u.Host == "" || u.Path != "" {
		return nil, fmt.Errorf("ext_proc dialer: bad picker address %q (want host:port)", addr)
	}
	tr := &http.Transport{
		ForceAttemptHTTP2:  true,
		DisableCompression: true,
		MaxIdleConns:       16,
	}
	var p http.Protocols
	if useTLS {
		p.SetHTTP2(true)
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: insecureSkipVerify} //nolint:gosec // the EPP's self-signed default
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	tr.Protocols = &p
	return &Dialer{base: u.Scheme + "://" + u.Host, client: &http.Client{Transport: tr}}, nil
}

// Close releases idle connections.
func (d *Dialer) Close() { d.client.CloseIdleConnections() }

// Stream is one bidirectional Process call. Send and Recv may run in
// different goroutines; neither is safe for concurrent use with itself.
type Stream struct {
	pw     *io.PipeWriter
	cancel context.CancelFunc

	ready chan struct{} // closed when the response headers (or an error) arrived
	resp  *http.Response
	err   error

	hdr     [5]byte
	done    bool
	closeMu sync.Mutex
	closed  bool
}

// Open starts a Process call. The HTTP request is issued in the background:
// grpc-go sends the response headers only with the first message, which the
// picker writes after it has read ours, so waiting for them here would
// deadlock.
func (d *Dialer) Open(ctx context.Context) *Stream {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	s := &Stream{pw: pw, cancel: cancel, ready: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.base+processPath, pr)
	if err != nil {
		s.err = fmt.Errorf("ext_proc: %w", err)
		close(s.ready)
		return s
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.ContentLength = -1
	go func() {
		defer close(s.ready)
		resp, err := d.client.Do(req)
		if err != nil {
			s.err = fmt.Errorf("ext_proc: %w", err)
			pr.CloseWithError(s.err)
			return
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			s.err = fmt.Errorf("ext_proc: picker answered HTTP %s", resp.Status)
			pr.CloseWithError(s.err)
			return
		}
		// A trailers-only response carries the status in the headers.
		if st := resp.Header.Get("Grpc-Status"); st != "" {
			resp.Body.Close()
			s.err = grpcError(st, resp.Header.Get("Grpc-Message"))
			if s.err == nil {
				s.err = io.EOF
			}
			pr.CloseWithError(s.err)
			return
		}
		s.resp = resp
	}()
	return s
}

// Send writes one message. It blocks until the transport has taken it,
// which HTTP/2 flow control bounds.
func (s *Stream) Send(msg []byte) error {
	buf := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(msg)))
	copy(buf[5:], msg)
	if _, err := s.pw.Write(buf); err != nil {
		return fmt.Errorf("ext_proc send: %w", err)
	}
	return nil
}

// CloseSend half-closes the stream: the picker sees end of stream.
func (s *Stream) CloseSend() error { return s.pw.Close() }

// Recv reads the next message. It returns io.EOF when the picker ended the
// call with status OK, and an error carrying the gRPC status otherwise.
func (s *Stream) Recv() ([]byte, error) {
	<-s.ready
	if s.err != nil {
		return nil, s.err
	}
	if s.done {
		return nil, io.EOF
	}
	body := s.resp.Body
	if _, err := io.ReadFull(body, s.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			s.done = true
			if gerr := grpcError(s.resp.Trailer.Get("Grpc-Status"), s.resp.Trailer.Get("Grpc-Message")); gerr != nil {
				return nil, gerr
			}
			if s.resp.Trailer.Get("Grpc-Status") == "" {
				return nil, errors.New("ext_proc recv: stream ended without grpc-status")
			}
			return nil, io.EOF
		}
		return nil, fmt.Errorf("ext_proc recv: %w", err)
	}
	if s.hdr[0] != 0 {
		return nil, errors.New("ext_proc recv: compressed message, none was negotiated")
	}
	n := binary.BigEndian.Uint32(s.hdr[1:])
	if n > maxMessageBytes {
		return nil, fmt.Errorf("ext_proc recv: message of %d bytes exceeds %d", n, maxMessageBytes)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(body, msg); err != nil {
		return nil, fmt.Errorf("ext_proc recv: truncated message: %w", err)
	}
	return msg, nil
}

// Close ends the call, cancelling it if the picker has not finished.
func (s *Stream) Close() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.pw.CloseWithError(errStreamClosed)
	s.cancel()
	<-s.ready
	if s.resp != nil {
		s.resp.Body.Close()
	}
}

var errStreamClosed = errors.New("ext_proc stream closed")

// GRPCError is a non-OK gRPC status from the picker.
type GRPCError struct {
	Code    int
	Message string
}

func (e *GRPCError) Error() string {
	return fmt.Sprintf("ext_proc: picker returned gRPC status %d: %s", e.Code, e.Message)
}

// grpcError turns a grpc-status/grpc-message pair into an error; nil for
// OK or an absent status.
func grpcError(status, msg string) error {
	if status == "" || status == "0" {
		return nil
	}
	code, err := strconv.Atoi(status)
	if err != nil {
		return fmt.Errorf("ext_proc: bad grpc-status %q", status)
	}
	if m, err := url.PathUnescape(msg); err == nil {
		msg = m
	}
	return &GRPCError{Code: code, Message: msg}
}
