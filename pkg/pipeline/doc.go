// Package pipeline is the glue the request-path roles share: how the
// instance's shared-memory region is sized and opened, the request-group
// message the apiserver sends the router (and the router forwards to the
// detokenizer), the ZeroMQ PUSH/PULL pipes that carry it, and the sidecar
// files that hold a request's stop strings.
//
// The ZeroMQ pipes are a hint, never the only copy of anything: every role
// also finds its work in the shm slot table (a restarted router rebuilds its
// queues from it, the detokenizer scans it for live slots), so a message
// lost to a peer restart costs latency, not a request. The pipes carry the
// workarounds go-zeromq/zmq4 needs (it never reconnects after the peer
// restarts, Recv fails with EOF on each peer disconnect, a stale ipc socket
// file blocks Listen): a Pusher re-dials whenever the peer's epoch in shm
// changes or a send fails, a Puller keeps looping over peer errors and
// removes a stale socket file before binding.
//
// pkg/ipc is meant to own the ZeroMQ wrapper; until it lands this package
// carries the minimum the pipeline needs.
package pipeline
