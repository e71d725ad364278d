//go:build !linux

package shm

import (
	"sync/atomic"
	"time"
)

// Without Linux FIFOs on the netpoller every bell sleeps on the futex
// stand-in (futex_other.go); see bellpipe_linux.go.

const pipeWaiter = 1 << 16

type bellPipes struct{}

func newBellPipes(string, []byte) *bellPipes                        { return nil }
func (*bellPipes) close()                                           {}
func (*bellPipes) ring(*atomic.Uint32)                              {}
func (*bellPipes) wait(Bell, uint32, time.Duration) (rung, ok bool) { return false, false }
