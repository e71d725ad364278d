//go:build !linux

package rolectl

import "errors"

func lowerPriority(int) error {
	return errors.New("needs Linux (per-thread nice values); set it to 0")
}
