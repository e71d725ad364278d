// Package router is the router role (cmd/router): it wires pkg/sched's
// Scheduler to the rest of the server. Request groups are announced by the
// apiserver on the shm intake ring (it announces them to the detokenizer
// on a ring of its own); infer's progress (output and KV lengths, releases, pauses) and the abort
// flags are read from the shm slots before every step; admissions go to
// infer as NEW commands on the shm ring; the token load goes to the shm
// load counters. Everything the router knows can be rebuilt from the slot
// table, which is what a restarted router does.
package router
