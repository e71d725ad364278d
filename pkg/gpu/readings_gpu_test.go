//go:build cgo && gpu

package gpu

import (
	"errors"
	"os"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestGPUReadings prints the real readings of every GPU (or of $GPU_UUID)
// through Open/Read/Check: scripts/gpu-readings.sh runs it on a GPU machine.
func TestGPUReadings(t *testing.T) {
	uuids := []string{os.Getenv("GPU_UUID")}
	if uuids[0] == "" {
		uuids = listUUIDs(t)
	}
	for _, uuid := range uuids {
		d, err := Open(uuid)
		if errors.Is(err, ErrNoNVML) {
			t.Skipf("no NVML here: %v", err)
		}
		if err != nil {
			t.Fatalf("open %s: %v", uuid, err)
		}
		r, err := d.Read()
		if err != nil {
			d.Close()
			t.Fatalf("read %s: %v", uuid, err)
		}
		t.Logf("GPU %d %s %s", r.Index, r.UUID, r.Name)
		t.Logf("  memory %d / %d MiB, utilization gpu %d%% memory %d%%, %d°C (slowdown %d°C)",
			r.MemoryUsed>>20, r.MemoryTotal>>20, r.UtilGPU, r.UtilMemory, r.TempC, r.SlowdownTempC)
		t.Logf("  uncorrected ECC (volatile) %d, remap pending %v failed %v, events subscribed %v, unsupported %q",
			r.ECCUncorrected, r.RemapPending, r.RemapFailed, r.Events, r.Unsupported)
		for _, p := range r.Processes {
			t.Logf("  compute process pid %d using %d MiB", p.Pid, p.UsedMemory>>20)
		}
		for _, e := range r.Events {
			t.Logf("  event %s xid %d (%s)", e.Kind, e.XID, XIDName(e.XID))
		}
		for _, p := range Check(r, Expect{}) {
			t.Logf("  problem: %v", p)
		}
		if idx, err := IndexByUUID(uuid); err != nil || idx != r.Index {
			t.Errorf("IndexByUUID(%s) = %d, %v; want %d", uuid, idx, err, r.Index)
		}
		if err := d.Close(); err != nil {
			t.Errorf("close %s: %v", uuid, err)
		}
	}
}

func listUUIDs(t *testing.T) []string {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Skipf("no NVML here: %v", ret)
	}
	defer lib.Shutdown()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		t.Fatalf("device count: %v", ret)
	}
	var out []string
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			t.Fatalf("device %d: %v", i, ret)
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			t.Fatalf("device %d uuid: %v", i, ret)
		}
		out = append(out, uuid)
	}
	if len(out) == 0 {
		t.Skip("NVML reports no GPUs")
	}
	return out
}
