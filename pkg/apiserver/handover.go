package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// A zero-gap restart (`lightllm restart apiserver`): the supervisor holds
// the listening socket and hands it to every apiserver it starts, starts
// the new one while the old one still serves, and stops the old one once
// the new one is ready. Both then accept from the one socket; the old one
// must not refuse anybody (a drain answers 503), so it hands over instead:
// it stops accepting (connections still queued in the kernel go to the new
// one), answers every request that still arrives on its open connections
// with "Connection: close" (the client's next request opens a connection,
// which the new one accepts), lets its streams finish, and exits.

// handoverIdle is how long the old apiserver keeps idle keep-alive
// connections open once it has no request in flight: a client in a request
// loop sends its next request on them within that time (and is answered,
// with Connection: close); closing them at once would race such a request.
const handoverIdle = 2 * time.Second

// countConn is the http.Server's ConnState hook.
func (s *Server) countConn(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.conns.Add(-1)
	}
}

// handOver is Run's stop when a newer apiserver serves the socket: serve
// what arrives on the open connections until they are closed, or the
// requests in flight are done and handoverIdle passed, or GracefulTimeout.
func (s *Server) handOver(l net.Listener, serveErr <-chan error) error {
	s.handingOver.Store(true)
	s.log.Info().Int64("in_flight", s.active.Load()).Int64("connections", s.conns.Load()).
		Msg("a newer apiserver serves the port: handing the clients over")
	// Closing our descriptor does not close the socket: the supervisor and
	// the new apiserver hold it, and the kernel's queue stays theirs.
	_ = l.Close()
	if err := <-serveErr; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
		s.log.Warn().Err(err).Msg("serve")
	}
	deadline := time.Now().Add(s.opts.GracefulTimeout)
	var quietSince time.Time
	for now := time.Now(); now.Before(deadline) && s.conns.Load() > 0; now = time.Now() {
		if s.active.Load() > 0 {
			quietSince = time.Time{}
		} else if quietSince.IsZero() {
			quietSince = now
		} else if now.Sub(quietSince) >= handoverIdle {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv := s.httpServer()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		left := s.active.Load()
		_ = srv.Close()
		return fmt.Errorf("handover: %d requests still in flight at --graceful_timeout: %w", left, err)
	}
	s.log.Info().Msg("handed over")
	return nil
}
