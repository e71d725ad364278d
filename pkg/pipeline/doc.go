// Package pipeline is the glue the request-path roles share: how the
// instance's shared-memory region is sized and opened.
//
// Every hop of a request lives in that region: the apiserver announces a
// queued group on the router's and the detokenizer's intake rings
// (shm.Intake), the router commands infer on the command ring, infer
// publishes tokens in the slot and the detokenizer text in its queue, and
// each rings the next one's bell. An announcement is a prompt wake-up,
// never the only copy of anything: every role also finds its work in the
// shm slot table (a restarted router rebuilds its queues from it, the
// detokenizer scans it for live slots), so an announcement lost to a crash
// costs latency, not a request.
package pipeline
