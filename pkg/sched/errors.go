package sched

import "errors"

var (
	// ErrBadRequest reports a request the scheduler cannot ever run (empty
	// group, zero lengths, duplicate id, larger than the KV capacity).
	ErrBadRequest = errors.New("sched: bad request")
	// ErrUnknownPolicy reports a policy name that is not one of PolicyNames().
	ErrUnknownPolicy = errors.New("sched: unknown policy")
	// ErrBadConfig reports an invalid Config or PolicyOptions.
	ErrBadConfig = errors.New("sched: bad config")
)
