//go:build !linux

package cputime

import "time"

// Thread is unavailable here: CPU-time figures read zero.
func Thread() time.Duration { return 0 }
