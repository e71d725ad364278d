//go:build linux

package rolectl

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lowerPriority sets every thread of this process to nice value n unless
// it already runs at n or lower priority (a process launched under nice
// keeps its setting). Linux keeps a nice value per thread: the ones the Go
// runtime starts later are cloned from these and inherit it. Raising the
// nice value needs no privilege.
func lowerPriority(n int) error {
	cur, err := selfNice()
	if err != nil {
		return err
	}
	if cur >= n {
		return nil
	}
	return eachThread(func(tid int) error {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil {
			return fmt.Errorf("setpriority thread %d: %w", tid, err)
		}
		return nil
	})
}

// shortenSlice gives every thread of this process an EEVDF slice of us
// microseconds (config.PipelineSliceUS), keeping each thread's nice value
// (sched_setattr sets both). Threads the Go runtime starts later are
// cloned from these and inherit it. Kernels before 6.12 accept the call
// and ignore the slice.
func shortenSlice(us int) error {
	return eachThread(func(tid int) error {
		// getpriority returns 20 - nice for a thread (the raw syscall's
		// convention, which x/sys passes through).
		prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
		if err != nil {
			return fmt.Errorf("getpriority thread %d: %w", tid, err)
		}
		attr := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: int32(20 - prio),
			Runtime: uint64(us) * 1000}
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
			return fmt.Errorf("sched_setattr thread %d: %w", tid, err)
		}
		return nil
	})
}

// eachThread calls set for every thread of this process. A thread that
// exited since the listing (ESRCH) is no error.
func eachThread(set func(tid int) error) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := set(tid); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// selfNice reads this thread's nice value (field 19 of /proc/thread-self/stat).
func selfNice() (int, error) {
	b, err := os.ReadFile("/proc/thread-self/stat")
	if err != nil {
		return 0, fmt.Errorf("read nice value: %w", err)
	}
	// The command name (field 2) may hold spaces; count from its ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if i < 0 || len(f) < 17 {
		return 0, fmt.Errorf("read nice value: short stat line")
	}
	return strconv.Atoi(f[16]) // fields 3.. start at f[0]; nice is field 19
}
