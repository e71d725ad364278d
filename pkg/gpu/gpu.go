// Package gpu reads one NVIDIA GPU, pinned by its UUID, through NVML
// (github.com/NVIDIA/go-nvml): memory, utilization, temperature, XID and ECC
// errors, and the compute processes holding it. The health role uses it to
// tell a sick device from a wedged engine; the infer role uses IndexByUUID to
// pin the same device.
//
// go-nvml needs cgo. Without cgo (CGO_ENABLED=0) Open reports ErrNoNVML, as
// it does on a machine without the NVIDIA driver, so everything else builds
// and runs without a GPU. Check (check.go) is plain Go: it turns readings
// into problems and is tested without NVML.
package gpu

import (
	"errors"
	"time"
)

// ErrNoNVML means NVML is not available here: no driver (libnvidia-ml.so
// not found), or a build without cgo. It is a normal state on CPU machines,
// not a failure.
var ErrNoNVML = errors.New("no NVML")

// ErrNotFound means no device has the requested UUID.
var ErrNotFound = errors.New("no GPU with this UUID")

// Device is one GPU opened by UUID.
type Device interface {
	// Info is what was read when the device was opened.
	Info() Info
	// Read takes one set of readings, including the XID/ECC events that
	// arrived since the previous Read.
	Read() (Readings, error)
	Close() error
}

// Info identifies an opened device.
type Info struct {
	UUID  string
	Index int // NVML index (the CUDA index when CUDA_DEVICE_ORDER=PCI_BUS_ID)
	Name  string
	// SlowdownTempC is the temperature at which the GPU throttles (0 when
	// NVML does not say).
	SlowdownTempC uint32
	// Events reports whether XID/ECC events could be subscribed to (some
	// virtualised GPUs do not support them).
	Events bool
}

// Process is one compute process holding a context on the device.
type Process struct {
	Pid        uint32
	UsedMemory uint64 // bytes; 0 when NVML cannot tell (e.g. under MIG)
}

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	EventXID          EventKind = "xid"            // critical XID error; XID holds the code
	EventECCDoubleBit EventKind = "ecc_double_bit" // uncorrectable memory error
)

// Event is one XID or ECC event.
type Event struct {
	Kind EventKind
	XID  uint64 // for EventXID
	At   time.Time
}

// Readings is one snapshot of the device. A field NVML does not support on
// this device is left zero and named in Unsupported.
type Readings struct {
	Info
	At          time.Time
	MemoryUsed  uint64 // bytes
	MemoryTotal uint64 // bytes
	UtilGPU     uint32 // percent of time a kernel ran over the last sample period
	UtilMemory  uint32 // percent of time device memory was read or written
	TempC       uint32
	// ECCUncorrected is the volatile uncorrected ECC error count (since the
	// driver loaded); ECCUncorrectedAtOpen is the same count when the device
	// was opened, so an increase is an error that happened while we ran.
	ECCUncorrected       uint64
	ECCUncorrectedAtOpen uint64
	// RemapPending means rows were remapped and the GPU needs a reset;
	// RemapFailed means remapping failed (the device is unreliable).
	RemapPending, RemapFailed bool
	Processes                 []Process
	Events                    []Event
	// Unsupported names the readings NVML does not support on this device
	// ("ecc", "processes", "remapped_rows", ...).
	Unsupported []string
}

// Supports reports whether a reading is supported.
func (r Readings) Supports(what string) bool {
	for _, u := range r.Unsupported {
		if u == what {
			return false
		}
	}
	return true
}

// Open opens the GPU with this UUID (as `nvidia-smi -L` prints it,
// "GPU-…"). It returns an error wrapping ErrNoNVML when NVML is not
// available, and ErrNotFound when no device has the UUID.
func Open(uuid string) (Device, error) { return openNVML(uuid) }
