//go:build !linux

package tensor

import "runtime"

func osYield() { runtime.Gosched() }
