//go:build cgo

package gpu

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeGPU is a DGX H200 mock (8 devices) with the readings the dgxh200 mock
// leaves nil filled in from plain fields the test changes.
type fakeGPU struct {
	srv *server.Server
	dev *server.Device // the device under test

	mu        sync.Mutex
	util      nvml.Utilization
	temp      uint32
	ecc       uint64
	eccRet    nvml.Return
	procs     []nvml.ProcessInfo
	procsRet  nvml.Return
	memRet    nvml.Return
	events    []nvml.EventData
	eventMask uint64
	freed     bool
	shutdowns int
}

func newFakeGPU(t *testing.T, index int) *fakeGPU {
	t.Helper()
	f := &fakeGPU{srv: dgxh200.New(), temp: 40, eventMask: nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError | nvml.EventTypeSingleBitEccError}
	f.dev = f.srv.Devices[index].(*server.Device)
	for _, d := range f.srv.Devices {
		f.equip(d.(*server.Device))
	}
	shutdown := f.srv.ShutdownFunc
	f.srv.ShutdownFunc = func() nvml.Return {
		f.mu.Lock()
		f.shutdowns++
		f.mu.Unlock()
		return shutdown()
	}
	f.srv.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
				f.mu.Lock()
				defer f.mu.Unlock()
				if len(f.events) == 0 {
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				}
				e := f.events[0]
				f.events = f.events[1:]
				return e, nvml.SUCCESS
			},
			FreeFunc: func() nvml.Return { f.mu.Lock(); f.freed = true; f.mu.Unlock(); return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	return f
}

// equip sets the device funcs the dgxh200 mock leaves nil.
func (f *fakeGPU) equip(d *server.Device) {
	getMem := d.GetMemoryInfoFunc
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		f.mu.Lock()
		ret := f.memRet
		f.mu.Unlock()
		if ret != nvml.SUCCESS {
			return nvml.Memory{}, ret
		}
		m, r := getMem()
		m.Used = 60 << 30
		return m, r
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.util, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.temp, nvml.SUCCESS
	}
	d.GetTemperatureThresholdFunc = func(th nvml.TemperatureThresholds) (uint32, nvml.Return) {
		if th == nvml.TEMPERATURE_THRESHOLD_SLOWDOWN {
			return 87, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.ecc, f.eccRet
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if d != f.dev {
			return []nvml.ProcessInfo{{Pid: 9999, UsedGpuMemory: 1 << 30}}, nvml.SUCCESS
		}
		return append([]nvml.ProcessInfo(nil), f.procs...), f.procsRet
	}
	d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.eventMask, nvml.SUCCESS
	}
	d.RegisterEventsFunc = func(mask uint64, _ nvml.EventSet) nvml.Return {
		if mask&nvml.EventTypeSingleBitEccError != 0 {
			return nvml.ERROR_INVALID_ARGUMENT // we never ask for corrected errors
		}
		return nvml.SUCCESS
	}
}

func (f *fakeGPU) set(fn func(f *fakeGPU)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func TestOpenPinsByUUID(t *testing.T) {
	f := newFakeGPU(t, 5)
	d, err := openWith(f.srv, f.dev.UUID)
	if err != nil {
		t.Fatal(err)
	}
	info := d.Info()
	if info.Index != 5 || info.UUID != f.dev.UUID || !strings.Contains(info.Name, "H200") || info.SlowdownTempC != 87 || !info.Events {
		t.Errorf("info %+v", info)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.freed || f.shutdowns != 1 {
		t.Errorf("Close: event set freed %v, shutdowns %d", f.freed, f.shutdowns)
	}
	if err := d.Close(); err != nil || f.shutdowns != 1 {
		t.Errorf("second Close: %v, shutdowns %d", err, f.shutdowns)
	}
	if _, err := d.Read(); err == nil {
		t.Error("Read after Close must fail")
	}
}

func TestOpenErrors(t *testing.T) {
	tests := map[string]struct {
		uuid    string
		initRet nvml.Return
		want    error
		msg     string
	}{
		"unknown uuid": {"GPU-00000000-0000-0000-0000-000000000000", nvml.SUCCESS, ErrNotFound, ""},
		"no driver":    {"GPU-x", nvml.ERROR_LIBRARY_NOT_FOUND, ErrNoNVML, ""},
		"not loaded":   {"GPU-x", nvml.ERROR_DRIVER_NOT_LOADED, ErrNoNVML, ""},
		"init fails":   {"GPU-x", nvml.ERROR_NO_PERMISSION, nil, "nvml init"},
		"empty uuid":   {"", nvml.SUCCESS, nil, "empty UUID"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFakeGPU(t, 0)
			f.srv.InitFunc = func() nvml.Return { return tc.initRet }
			_, err := openWith(f.srv, tc.uuid)
			if err == nil {
				t.Fatal("want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v, want it to mention %q", err, tc.msg)
			}
			if tc.initRet == nvml.SUCCESS && tc.uuid != "" && f.shutdowns != 1 {
				t.Errorf("a failed open after Init must shut NVML down (%d)", f.shutdowns)
			}
		})
	}
}

// Without the NVIDIA driver the real library reports "no NVML", not an error.
func TestOpenRealLibraryWithoutDriver(t *testing.T) {
	d, err := Open("GPU-00000000-0000-0000-0000-000000000000")
	switch {
	case errors.Is(err, ErrNoNVML):
		t.Logf("as expected on a CPU machine: %v", err)
	case errors.Is(err, ErrNotFound):
		t.Logf("NVML present, no such GPU: %v", err)
	case err == nil:
		d.Close()
		t.Fatal("a made-up UUID opened a device")
	default:
		t.Fatalf("unexpected error: %v", err)
	}
}

func TestReadAndCheckWithMock(t *testing.T) {
	const inferPid = 4242
	f := newFakeGPU(t, 2)
	f.set(func(f *fakeGPU) {
		f.util = nvml.Utilization{Gpu: 93, Memory: 40}
		f.ecc = 1 // an old error, from before we started
		f.procs = []nvml.ProcessInfo{{Pid: inferPid, UsedGpuMemory: 100 << 30}}
	})
	d, err := openWith(f.srv, f.dev.UUID)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	steps := []struct {
		name   string
		change func(f *fakeGPU)
		fatal  string // "" = no fatal problem
	}{
		{"healthy", func(*fakeGPU) {}, ""},
		{"infer lost its context", func(f *fakeGPU) { f.procs = []nvml.ProcessInfo{{Pid: 77}} }, "infer (pid 4242) holds no context"},
		{"back", func(f *fakeGPU) { f.procs = []nvml.ProcessInfo{{Pid: inferPid}} }, ""},
		{"xid 79", func(f *fakeGPU) {
			f.events = append(f.events, nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: 79})
		}, "XID 79"},
		{"events are drained once", func(*fakeGPU) {}, ""},
		{"double-bit ecc", func(f *fakeGPU) {
			f.events = append(f.events, nvml.EventData{EventType: nvml.EventTypeDoubleBitEccError})
			f.ecc = 2
		}, "double-bit ECC"},
	}
	for _, st := range steps {
		f.set(st.change)
		r, err := d.Read()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if r.UtilGPU != 93 || r.MemoryUsed != 60<<30 || r.MemoryTotal == 0 || r.TempC != 40 || r.Index != 2 {
			t.Fatalf("%s: readings %+v", st.name, r)
		}
		var fatal []string
		for _, p := range Check(r, Expect{InferPid: inferPid}) {
			if p.Fatal {
				fatal = append(fatal, p.What)
			}
		}
		switch {
		case st.fatal == "" && len(fatal) > 0:
			t.Errorf("%s: unexpected fatal problems %q", st.name, fatal)
		case st.fatal != "" && !strings.Contains(strings.Join(fatal, "|"), st.fatal):
			t.Errorf("%s: fatal problems %q, want one mentioning %q", st.name, fatal, st.fatal)
		}
	}
	// The double-bit step also raised the ECC count past its value at open.
	r, _ := d.Read()
	if r.ECCUncorrectedAtOpen != 1 || r.ECCUncorrected != 2 {
		t.Errorf("ecc at open %d now %d", r.ECCUncorrectedAtOpen, r.ECCUncorrected)
	}
}

func TestReadUnsupportedAndLost(t *testing.T) {
	f := newFakeGPU(t, 0)
	f.set(func(f *fakeGPU) {
		f.eccRet = nvml.ERROR_NOT_SUPPORTED
		f.procsRet = nvml.ERROR_NOT_SUPPORTED
		f.eventMask = 0
	})
	d, err := openWith(f.srv, f.dev.UUID)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Info().Events {
		t.Error("events reported although the device supports none")
	}
	r, err := d.Read()
	if err != nil {
		t.Fatal(err)
	}
	if r.Supports("ecc") || r.Supports("processes") || !r.Supports("memory") {
		t.Errorf("unsupported %q", r.Unsupported)
	}
	f.set(func(f *fakeGPU) { f.memRet = nvml.ERROR_GPU_IS_LOST })
	if _, err := d.Read(); err == nil || !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
		t.Fatalf("a lost GPU must fail Read, got %v", err)
	}
}
