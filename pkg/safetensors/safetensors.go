// Package safetensors reads (mmap) and writes Hugging Face safetensors
// files, single or sharded with a model.safetensors.index.json.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// DType is a safetensors element type name ("F32", "F16", "BF16", ...).
type DType string

// The element types of the format. The model code computes on F32, F16 and
// BF16; the others are recognised so that a file can be validated.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	Bool DType = "BOOL"
	F8E4 DType = "F8_E4M3"
	F8E5 DType = "F8_E5M2"
)

var dtypeSizes = map[DType]uint64{F32: 4, F16: 2, BF16: 2, F64: 8, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1,
	Bool: 1, F8E4: 1, F8E5: 1, "U16": 2, "U32": 4, "U64": 8}

// Size is the byte size of one element, 0 when the type is unknown.
func (d DType) Size() uint64 { return dtypeSizes[d] }

// maxHeader bounds the JSON header (the reference implementation uses 100 MB).
const maxHeader = 100 << 20

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name   string
	DType  DType
	Shape  []int64 // row-major, PyTorch order ([out, in] for a Linear weight)
	Offset uint64  // relative to the data section
	Size   uint64
}

// NumElements is the product of the shape.
func (t *TensorInfo) NumElements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= uint64(d)
	}
	return n
}

// File is one mmap'd safetensors file.
type File struct {
	Path     string
	Tensors  []TensorInfo // in data order
	Metadata map[string]string

	data    []byte
	dataOff uint64
	mmapped bool
	byName  map[string]int
}

// Open mmaps and parses a safetensors file.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	if st.Size() < 8 {
		return nil, fmt.Errorf("safetensors %s: file is %d bytes, too short for a header", path, st.Size())
	}
	if st.Size() > math.MaxInt {
		return nil, fmt.Errorf("safetensors %s: file too large to map", path)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: mmap: %w", path, err)
	}
	f, err := Parse(path, data)
	if err != nil {
		_ = unix.Munmap(data)
		return nil, err
	}
	f.mmapped = true
	return f, nil
}

// Mapped reports whether tensor data slices point into a read-only file
// mapping (Open) rather than memory the caller handed to Parse.
func (f *File) Mapped() bool { return f.mmapped }

// DropPages unmaps the file's pages from this process (MADV_DONTNEED; a
// no-op for an image given to Parse): they stay in the page cache and are
// faulted back in if read again (see gguf.File.DropPages).
func (f *File) DropPages() {
	if f.mmapped && len(f.data) > 0 {
		_ = unix.Madvise(f.data, unix.MADV_DONTNEED) // best effort
	}
}

// Parse parses a safetensors image held in memory; name is used in errors.
func Parse(name string, data []byte) (*File, error) {
	f, err := parse(name, data)
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", name, err)
	}
	return f, nil
}

type rawInfo struct {
	DType       DType     `json:"dtype"`
	Shape       []int64   `json:"shape"`
	DataOffsets [2]uint64 `json:"data_offsets"`
}

func parse(name string, data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("file is %d bytes, too short for a header", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > maxHeader || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("header length %d does not fit the file (%d bytes): truncated or not safetensors", n, len(data))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &raw); err != nil {
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	f := &File{Path: name, data: data, dataOff: 8 + n, byName: map[string]int{}}
	dataLen := uint64(len(data)) - f.dataOff
	// Checked in name order so the same damage always gives the same error.
	keys := make([]string, 0, len(raw))
	for key := range raw {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		msg := raw[key]
		if key == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__: %w", err)
			}
			continue
		}
		var ri rawInfo
		if err := json.Unmarshal(msg, &ri); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", key, err)
		}
		es := ri.DType.Size()
		if es == 0 {
			return nil, fmt.Errorf("tensor %q: unknown dtype %q", key, ri.DType)
		}
		elems := uint64(1)
		for _, d := range ri.Shape {
			hi, lo := bits.Mul64(elems, uint64(d))
			if d < 0 || hi != 0 || lo > 1<<60 {
				return nil, fmt.Errorf("tensor %q: bad shape %v", key, ri.Shape)
			}
			elems = lo
		}
		begin, end := ri.DataOffsets[0], ri.DataOffsets[1]
		if begin > end || end-begin != elems*es {
			return nil, fmt.Errorf("tensor %q: data_offsets %v do not match %s %v (%d bytes)", key, ri.DataOffsets, ri.DType, ri.Shape, elems*es)
		}
		if end > dataLen {
			return nil, fmt.Errorf("tensor %q needs bytes [%d, %d) of the data section but it has %d: truncated",
				key, begin, end, dataLen)
		}
		f.Tensors = append(f.Tensors, TensorInfo{Name: key, DType: ri.DType, Shape: ri.Shape, Offset: begin, Size: end - begin})
	}
	sort.Slice(f.Tensors, func(i, j int) bool {
		if f.Tensors[i].Offset != f.Tensors[j].Offset {
			return f.Tensors[i].Offset < f.Tensors[j].Offset
		}
		return f.Tensors[i].Name < f.Tensors[j].Name
	})
	for i := range f.Tensors {
		f.byName[f.Tensors[i].Name] = i
	}
	return f, nil
}

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns t's bytes (a slice of the mapping, valid until Close).
func (f *File) TensorData(t *TensorInfo) []byte {
	s := f.dataOff + t.Offset
	return f.data[s : s+t.Size : s+t.Size]
}

// Close unmaps the file.
func (f *File) Close() error {
	if f == nil || f.data == nil {
		return nil
	}
	data := f.data
	f.data = nil
	if f.mmapped {
		if err := unix.Munmap(data); err != nil {
			return fmt.Errorf("safetensors %s: munmap: %w", f.Path, err)
		}
	}
	return nil
}
