//go:build !linux

package grammar

import "time"

// threadCPU is unavailable here: CPU-time figures read zero.
func threadCPU() time.Duration { return 0 }
