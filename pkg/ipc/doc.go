// Package ipc carries the instance's metric events over pure-Go ZeroMQ
// (github.com/go-zeromq/zmq4 v0.17.0) on an ipc:// socket in the
// instance's run directory. docs/protocol.md lists every message, its
// sender, receiver and moment.
//
// Only the metric channel uses ZeroMQ: every role → metric is
// OptionalPusher → Puller (DESIGN.md §3). It never blocks the sender and
// drops and counts while metric is down, which suits observations that the
// next scrape supersedes. The apiserver → router and router → detokenizer
// hops carried reliable Pushers once; they are shm intake rings now
// (shm.Intake, issue 25), since they lie on every request's way to its
// first token.
//
// The package exists to work around zmq4's measured faults:
//   - it never reconnects after the peer restarts: OptionalPusher closes
//     its socket on a send error, re-dials once at once, then with backoff;
//     zmq4's WithAutomaticReconnect is never used (it deadlocks);
//   - Recv returns io.EOF on every peer disconnect: Puller counts it and
//     keeps receiving;
//   - a socket file left by a killed process blocks Listen: it is removed
//     before binding, unless a live process still accepts on it;
//   - a PUSH connected to several peers duplicates every message: every
//     pipe is 1:1 (one OptionalPusher per role; many may feed one Puller).
//
// Example, a role's side (pkg/metrics.Client wraps it):
//
//	ep, _ := ipc.Endpoint(runDir, ipc.SockMetric)
//	toMetric, _ := ipc.NewOptionalPusher(ep, ipc.Options{Logger: log})
//	defer toMetric.Close()
//	toMetric.Send(&ipc.Metric{Kind: ipc.CounterAdd,
//		Name: "lightllm_request_count", Value: 1}) // false: dropped
//
// and the metric role's side:
//
//	from, err := ipc.NewPuller(ep, ipc.Options{Logger: log})
//	for {
//		m, err := from.Recv(ctx) // a batch frame arrives message by message
//		if errors.Is(err, ipc.ErrBadMessage) { continue } // logged, skipped
//		if err != nil { return err }
//		obs := m.(*ipc.Metric)
//		...
//	}
package ipc
