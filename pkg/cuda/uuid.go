package cuda

import (
	"fmt"
	"strings"
)

// formatUUID writes a device UUID as NVML and nvidia-smi do:
// GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func formatUUID(prefix string, b [16]byte) string {
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// sameUUID compares a requested UUID with a device's, ignoring case and the
// GPU-/MIG- prefix: the CUDA driver reports the bytes only, and whether they
// name a GPU or a MIG instance follows from the device.
func sameUUID(want, have string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		s = strings.TrimPrefix(s, "gpu-")
		return strings.TrimPrefix(s, "mig-")
	}
	return want != "" && norm(want) == norm(have)
}
