//go:build cgo

package gpu

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// library is the part of nvml.Interface we use, so tests can pass the
// module's mock (pkg/nvml/mock) instead of the real library.
type library interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	DeviceGetHandleByUUID(uuid string) (nvml.Device, nvml.Return)
	EventSetCreate() (nvml.EventSet, nvml.Return)
}

func openNVML(uuid string) (Device, error) { return openWith(nvml.New(), uuid) }

// nvmlDevice is a Device read through NVML.
type nvmlDevice struct {
	lib  library
	dev  nvml.Device
	set  nvml.EventSet // nil when events are not supported
	info Info

	eccAtOpen uint64

	mu     sync.Mutex
	closed bool
}

// maxEventsPerRead bounds how many queued events one Read drains.
const maxEventsPerRead = 64

// openWith opens uuid through lib. NVML missing (no driver) is ErrNoNVML.
func openWith(lib library, uuid string) (Device, error) {
	if uuid == "" {
		return nil, fmt.Errorf("open GPU: empty UUID")
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED {
			return nil, fmt.Errorf("%w: %v", ErrNoNVML, ret)
		}
		return nil, fmt.Errorf("nvml init: %w", ret)
	}
	d := &nvmlDevice{lib: lib}
	fail := func(err error) (Device, error) {
		d.release()
		return nil, err
	}
	dev, ret := lib.DeviceGetHandleByUUID(uuid)
	switch {
	case ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT:
		return fail(fmt.Errorf("open GPU %s: %w", uuid, ErrNotFound))
	case ret != nvml.SUCCESS:
		return fail(fmt.Errorf("open GPU %s: %w", uuid, ret))
	}
	d.dev = dev
	d.info.UUID = uuid
	idx, ret := dev.GetIndex()
	if ret != nvml.SUCCESS {
		return fail(fmt.Errorf("GPU %s: index: %w", uuid, ret))
	}
	d.info.Index = idx
	if name, ret := dev.GetName(); ret == nvml.SUCCESS {
		d.info.Name = name
	}
	if t, ret := dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN); ret == nvml.SUCCESS {
		d.info.SlowdownTempC = t
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ret == nvml.SUCCESS {
		d.eccAtOpen = n
	}
	d.subscribe()
	return d, nil
}

// subscribe registers for critical XID and double-bit ECC events; a device
// or driver that cannot deliver them leaves Info.Events false.
func (d *nvmlDevice) subscribe() {
	supported, ret := d.dev.GetSupportedEventTypes()
	if ret != nvml.SUCCESS {
		return
	}
	mask := supported & uint64(nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError)
	if mask == 0 {
		return
	}
	set, ret := d.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return
	}
	if ret := d.dev.RegisterEvents(mask, set); ret != nvml.SUCCESS {
		set.Free()
		return
	}
	d.set = set
	d.info.Events = true
}

func (d *nvmlDevice) Info() Info { return d.info }

// Read takes one snapshot. A reading NVML does not support is skipped and
// named in Unsupported; any other NVML error fails the Read (a lost GPU
// answers ERROR_GPU_IS_LOST to everything).
func (d *nvmlDevice) Read() (Readings, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := Readings{Info: d.info, At: time.Now(), ECCUncorrectedAtOpen: d.eccAtOpen}
	if d.closed {
		return r, fmt.Errorf("read GPU %s: closed", d.info.UUID)
	}
	// optional records an unsupported reading; other errors are returned.
	optional := func(what string, ret nvml.Return) (bool, error) {
		switch ret {
		case nvml.SUCCESS:
			return true, nil
		case nvml.ERROR_NOT_SUPPORTED:
			r.Unsupported = append(r.Unsupported, what)
			return false, nil
		}
		return false, fmt.Errorf("read GPU %s %s: %w", d.info.UUID, what, ret)
	}
	mem, ret := d.dev.GetMemoryInfo()
	if ok, err := optional("memory", ret); err != nil {
		return r, err
	} else if ok {
		r.MemoryUsed, r.MemoryTotal = mem.Used, mem.Total
	}
	util, ret := d.dev.GetUtilizationRates()
	if ok, err := optional("utilization", ret); err != nil {
		return r, err
	} else if ok {
		r.UtilGPU, r.UtilMemory = util.Gpu, util.Memory
	}
	temp, ret := d.dev.GetTemperature(nvml.TEMPERATURE_GPU)
	if ok, err := optional("temperature", ret); err != nil {
		return r, err
	} else if ok {
		r.TempC = temp
	}
	ecc, ret := d.dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
	if ok, err := optional("ecc", ret); err != nil {
		return r, err
	} else if ok {
		r.ECCUncorrected = ecc
	}
	_, _, pending, failed, ret := d.dev.GetRemappedRows()
	if ok, err := optional("remapped_rows", ret); err != nil {
		return r, err
	} else if ok {
		r.RemapPending, r.RemapFailed = pending, failed
	}
	procs, ret := d.dev.GetComputeRunningProcesses()
	if ok, err := optional("processes", ret); err != nil {
		return r, err
	} else if ok {
		for _, p := range procs {
			r.Processes = append(r.Processes, Process{Pid: p.Pid, UsedMemory: p.UsedGpuMemory})
		}
	}
	events, err := d.drainEvents()
	r.Events = events
	return r, err
}

// drainEvents collects the events queued since the last call, without
// waiting.
func (d *nvmlDevice) drainEvents() ([]Event, error) {
	if d.set == nil {
		return nil, nil
	}
	var out []Event
	for len(out) < maxEventsPerRead {
		data, ret := d.set.Wait(0)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			return out, nil
		default:
			return out, fmt.Errorf("GPU %s events: %w", d.info.UUID, ret)
		}
		ev := Event{At: time.Now()}
		switch {
		case data.EventType&nvml.EventTypeXidCriticalError != 0:
			ev.Kind, ev.XID = EventXID, data.EventData
		case data.EventType&nvml.EventTypeDoubleBitEccError != 0:
			ev.Kind = EventECCDoubleBit
		default:
			continue
		}
		out = append(out, ev)
	}
	return out, nil
}

func (d *nvmlDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.release()
}

func (d *nvmlDevice) release() error {
	var errs []error
	if d.set != nil {
		if ret := d.set.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("free event set: %w", ret))
		}
		d.set = nil
	}
	if ret := d.lib.Shutdown(); ret != nvml.SUCCESS {
		errs = append(errs, fmt.Errorf("nvml shutdown: %w", ret))
	}
	return errors.Join(errs...)
}
