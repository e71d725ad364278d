// Package pipeline is the glue the request-path roles share: how the
// instance's shared-memory region is sized and opened, a non-blocking
// sender over pkg/ipc's PUSH pipe for the request-group messages
// (router → detokenizer; the apiserver announces groups to the router on
// the shm intake ring, shm.Intake).
//
// The ZeroMQ messages are a prompt wake-up, never the only copy of
// anything: every role also finds its work in the shm slot table (a
// restarted router rebuilds its queues from it, the detokenizer scans it for
// live slots), so a message lost to a peer restart costs latency, not a
// request.
package pipeline
