package gpu

import (
	"fmt"
	"strings"
)

// Expect is what the device should look like.
type Expect struct {
	// InferPid is the infer process that must hold the device; 0 skips the
	// process check (CPU backend, or infer not ready yet).
	InferPid int
	// PidVisible reports whether a pid exists in our pid namespace. NVML
	// lists host pids; inside a container they do not match ours, and the
	// process check is then inconclusive rather than failed. nil assumes
	// every pid is visible.
	PidVisible func(pid int) bool
}

// Problem is one thing wrong with the device. Fatal problems make the
// device (and the engine on it) unhealthy; the others degrade it.
type Problem struct {
	Fatal bool
	What  string
}

func (p Problem) String() string {
	if p.Fatal {
		return "fatal: " + p.What
	}
	return p.What
}

// isAppXID reports XIDs an application causes (bad kernel, illegal
// address, preemption cleanup), not the hardware: the NVIDIA Kubernetes
// device plugin ignores the same set when marking devices unhealthy. They
// still degrade: our engine is the application.
func isAppXID(xid uint64) bool {
	switch xid {
	case 13, 31, 43, 45, 68, 109:
		return true
	}
	return false
}

// XIDName describes the XIDs operators meet most (NVIDIA's XID catalogue).
func XIDName(xid uint64) string {
	switch xid {
	case 13:
		return "graphics engine exception"
	case 31:
		return "GPU memory page fault"
	case 43:
		return "GPU stopped processing"
	case 45:
		return "preemptive cleanup"
	case 48:
		return "double-bit ECC error"
	case 63:
		return "ECC page retirement or row remapping event"
	case 64:
		return "ECC page retirement or row remapping failure"
	case 68:
		return "video processor exception"
	case 74:
		return "NVLink error"
	case 79:
		return "GPU has fallen off the bus"
	case 92:
		return "high single-bit ECC error rate"
	case 94:
		return "contained ECC error"
	case 95:
		return "uncontained ECC error"
	case 109:
		return "context switch timeout"
	case 119:
		return "GSP RPC timeout"
	case 120:
		return "GSP error"
	}
	return "see NVIDIA's XID catalogue"
}

// Check turns readings into problems; none means the device is healthy.
func Check(r Readings, e Expect) []Problem {
	var out []Problem
	add := func(fatal bool, format string, args ...any) {
		out = append(out, Problem{Fatal: fatal, What: fmt.Sprintf(format, args...)})
	}
	for _, ev := range r.Events {
		switch ev.Kind {
		case EventXID:
			add(!isAppXID(ev.XID), "XID %d (%s) on %s", ev.XID, XIDName(ev.XID), r.UUID)
		case EventECCDoubleBit:
			add(true, "double-bit ECC error on %s", r.UUID)
		}
	}
	if r.ECCUncorrected > r.ECCUncorrectedAtOpen {
		add(true, "%d new uncorrected ECC errors on %s", r.ECCUncorrected-r.ECCUncorrectedAtOpen, r.UUID)
	}
	if r.RemapFailed {
		add(true, "row remapping failed on %s", r.UUID)
	} else if r.RemapPending {
		add(false, "row remapping pending on %s: the GPU needs a reset", r.UUID)
	}
	if r.SlowdownTempC > 0 && r.TempC >= r.SlowdownTempC {
		add(false, "%s at %d°C, at or above its slowdown temperature %d°C", r.UUID, r.TempC, r.SlowdownTempC)
	}
	if e.InferPid > 0 {
		out = append(out, checkProcesses(r, e)...)
	}
	return out
}

func checkProcesses(r Readings, e Expect) []Problem {
	if !r.Supports("processes") {
		return []Problem{{What: "cannot list compute processes on " + r.UUID}}
	}
	var ours bool
	var others []string
	visible := 0
	for _, p := range r.Processes {
		if int(p.Pid) == e.InferPid {
			ours = true
			continue
		}
		if e.PidVisible == nil || e.PidVisible(int(p.Pid)) {
			visible++
		}
		others = append(others, fmt.Sprintf("%d (%d MiB)", p.Pid, p.UsedMemory>>20))
	}
	var out []Problem
	switch {
	case ours:
	case len(r.Processes) > 0 && visible == 0 && e.PidVisible != nil:
		// Every pid NVML lists is foreign to our namespace: a container.
		out = append(out, Problem{What: fmt.Sprintf("cannot verify infer (pid %d) holds %s: NVML lists pids of another pid namespace", e.InferPid, r.UUID)})
	default:
		out = append(out, Problem{Fatal: true, What: fmt.Sprintf("infer (pid %d) holds no context on %s (compute processes: %s)",
			e.InferPid, r.UUID, orNone(others))})
	}
	if ours && len(others) > 0 {
		out = append(out, Problem{What: fmt.Sprintf("other processes share %s: %s", r.UUID, strings.Join(others, ", "))})
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
