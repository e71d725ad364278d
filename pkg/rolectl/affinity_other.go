//go:build !linux

package rolectl

import "errors"

func pinCPUs(bool, int) ([]int, error) {
	return nil, errors.New("pin_cpus needs Linux (per-thread CPU affinity); leave it off")
}
