// Package ipc carries the instance's small control messages over pure-Go
// ZeroMQ (github.com/go-zeromq/zmq4 v0.17.0) on ipc:// sockets in the
// instance's run directory. Bulk data (token ids, text) goes through shm;
// these messages only announce it. docs/protocol.md lists every message,
// its sender, receiver and moment.
//
// The package exists to work around zmq4's measured faults:
//   - it never reconnects after the peer restarts: Pusher re-creates and
//     re-dials its socket on a send error (unlimited retries, backoff);
//     zmq4's WithAutomaticReconnect is never used (it deadlocks);
//   - Recv returns io.EOF on every peer disconnect: Puller counts it and
//     keeps receiving;
//   - a socket file left by a killed process blocks Listen: it is removed
//     before binding, unless a live process still accepts on it;
//   - a PUSH connected to several peers duplicates every message: every
//     pipe is 1:1 (one Pusher per destination; many Pushers may feed one
//     Puller).
//
// Channels (DESIGN.md §3): router → detokenizer is Pusher → Puller; every
// role → metric is OptionalPusher → Puller (never blocks the sender; drops
// and counts while metric is down). The apiserver → router hop was a
// Pusher too; it is the shm intake ring now (shm.Intake, issue 25), since
// it lies on every request's first token.
//
// Example, the router side:
//
//	ep, _ := ipc.Endpoint(runDir, ipc.SockDetokenizer)
//	toDetok, _ := ipc.NewPusher(ep, ipc.Options{Logger: log})
//	defer toDetok.Close()
//	err := toDetok.Send(ctx, &ipc.NewGroup{GroupID: gid, Arrival: t0,
//		Slots: []ipc.SlotRef{{Index: uint32(slot.Index), Gen: gen}}})
//
// and the detokenizer side:
//
//	from, err := ipc.NewPuller(ep, ipc.Options{Logger: log})
//	for {
//		m, err := from.Recv(ctx)
//		if errors.Is(err, ipc.ErrBadMessage) { continue } // logged, skipped
//		if err != nil { return err }
//		g := m.(*ipc.NewGroup)
//		...
//	}
package ipc
