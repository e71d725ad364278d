package rolectl

import "fmt"

// splitCPUs is pin_cpus' division of the allowed CPUs (ascending): infer
// takes the first threads of them, the other roles the rest. It refuses
// a split that leaves either side without a CPU.
func splitCPUs(allowed []int, threads int, infer bool) ([]int, error) {
	if threads <= 0 || threads >= len(allowed) {
		return nil, fmt.Errorf("pin_cpus: --threads %d leaves none of the %d CPUs this instance may use (%v) for the other roles", threads, len(allowed), allowed)
	}
	if infer {
		return allowed[:threads], nil
	}
	return allowed[threads:], nil
}
