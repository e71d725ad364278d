//go:build !linux

package rolectl

import "errors"

func lowerPriority(int) error {
	return errors.New("needs Linux (per-thread nice values); set it to 0")
}

func shortenSlice(int) error {
	return errors.New("needs Linux (EEVDF slices); set it to 0")
}
