//go:build !linux

package shm

import (
	"sync/atomic"
	"time"
)

// Without Linux FIFOs on the netpoller every bell sleeps on the futex
// stand-in (futex_other.go); see bellpipe_linux.go.

const pipeWaiter = 1 << 16

type bellPipe struct{}

func registerPipes(*Region)                                {}
func closePipes(*Region)                                   {}
func ringPipe(*atomic.Uint32)                              {}
func waitPipe(Bell, uint32, time.Duration) (rung, ok bool) { return false, false }
