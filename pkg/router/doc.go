// Package router is the router role (cmd/router): it wires pkg/sched's
// Scheduler to the rest of the server. Request groups arrive from the
// apiserver over ZeroMQ and are forwarded to the detokenizer on receipt;
// infer's progress (output and KV lengths, releases, pauses) and the abort
// flags are read from the shm slots before every step; admissions go to
// infer as NEW commands on the shm ring; the token load goes to the shm
// load counters. Everything the router knows can be rebuilt from the slot
// table, which is what a restarted router does.
package router
