//go:build !cgo

package gpu

import "fmt"

func openNVML(string) (Device, error) {
	return nil, fmt.Errorf("%w: built without cgo (go-nvml needs it)", ErrNoNVML)
}
