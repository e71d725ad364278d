// Package sched is the router's scheduling core: the waiting queue, the
// running set, and the admission policies that decide which waiting
// requests start next (LightLLM's ChunkedPrefillQueue and its Past-Future
// rule).
//
// The package is pure, in-process logic with no dependencies beyond the
// standard library: it never touches shared memory or sockets. The router
// role (pkg/router) copies infer's published progress (output length, KV
// length, release) into the Request values and calls Scheduler.Step once
// per loop; the simulator (pkg/sim) drives the very same Scheduler from a
// model of step time. See docs/scheduling.md for every formula and the
// policy comparison.
package sched
