//go:build !linux

package hub

import "io"

// isTerminal is false off Linux: progress falls back to log lines, which are
// always correct, just less pretty.
func isTerminal(io.Writer) bool { return false }
