package shm

import "errors"

// Attach and Create errors. Wrapped with the file path; test with errors.Is.
var (
	ErrNotFound  = errors.New("shm: no such instance (is the launcher running?)")
	ErrExists    = errors.New("shm: instance already exists")
	ErrTruncated = errors.New("shm: file smaller than its header")
	ErrBadMagic  = errors.New("shm: bad magic (not a lightllm shm file)")
	ErrNotReady  = errors.New("shm: file is still being initialised")
	ErrVersion   = errors.New("shm: layout version mismatch")
	ErrLayout    = errors.New("shm: header describes an invalid layout")
	ErrSize      = errors.New("shm: file size does not match its header")
	ErrNoSpace   = errors.New("shm: not enough space in the shm filesystem")
)

// Slot, ring and queue errors.
var (
	ErrNoFreeSlot = errors.New("shm: no free request slot")
	ErrBadIndex   = errors.New("shm: slot index out of range")
	ErrStale      = errors.New("shm: slot generation changed (stale reference)")
	ErrState      = errors.New("shm: slot is not in the expected state")
	ErrTooLong    = errors.New("shm: does not fit in the slot")
	ErrTextFull   = errors.New("shm: text queue full")
	ErrExtrasFull = errors.New("shm: extras pool full")
	ErrRingFull   = errors.New("shm: command ring full")
	ErrCorrupt    = errors.New("shm: corrupt shared state")
	ErrBadRole    = errors.New("shm: unknown role")
)
