//go:build linux

package rolectl

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinCPUs restricts every thread of this process to its share of the CPUs
// it may run on now (its affinity mask: a cgroup cpuset, systemd's
// CPUAffinity, taskset): infer gets the first `threads` of them, any other
// role the rest (splitCPUs). Linux keeps the mask per thread; threads the
// Go runtime starts later are cloned from these and inherit it.
func pinCPUs(infer bool, threads int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	var allowed []int
	for c := 0; c < len(set)*64 && len(allowed) < set.Count(); c++ {
		if set.IsSet(c) {
			allowed = append(allowed, c)
		}
	}
	mine, err := splitCPUs(allowed, threads, infer)
	if err != nil {
		return nil, err
	}
	var want unix.CPUSet
	for _, c := range mine {
		want.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that exited since the listing is no error.
		if err := unix.SchedSetaffinity(tid, &want); err != nil && err != unix.ESRCH {
			return nil, fmt.Errorf("set CPU affinity of thread %d: %w", tid, err)
		}
	}
	return mine, nil
}
