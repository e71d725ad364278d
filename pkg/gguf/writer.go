package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// Writer builds a GGUF file: metadata in insertion order, then tensors.
// Errors from Set/AddTensor are remembered and returned by WriteTo/WriteFile,
// so a long list of Set calls needs one error check.
type Writer struct {
	Version uint32 // 1, 2 or 3 (default 3)

	keys    []string
	vals    map[string]kvEntry
	tensors []writerTensor
	names   map[string]bool
	err     error
}

type kvEntry struct {
	typ  ValueType
	elem ValueType // for arrays
	val  any
}

type writerTensor struct {
	info  TensorInfo
	data  []byte
	write func(io.Writer) error
}

// NewWriter returns an empty version-3 writer.
func NewWriter() *Writer {
	return &Writer{Version: 3, vals: map[string]kvEntry{}, names: map[string]bool{}}
}

// Set adds or replaces a metadata value. Supported Go types: string, bool,
// uint8…uint64, int8…int64, float32, float64 and slices of these.
func (w *Writer) Set(key string, v any) {
	typ, elem, ok := classify(v)
	if !ok {
		w.fail(fmt.Errorf("gguf writer: metadata %q: unsupported Go type %T", key, v))
		return
	}
	if _, exists := w.vals[key]; !exists {
		w.keys = append(w.keys, key)
	}
	w.vals[key] = kvEntry{typ, elem, v}
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func classify(v any) (ValueType, ValueType, bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, 0, true
	case int8:
		return TypeInt8, 0, true
	case uint16:
		return TypeUint16, 0, true
	case int16:
		return TypeInt16, 0, true
	case uint32:
		return TypeUint32, 0, true
	case int32:
		return TypeInt32, 0, true
	case float32:
		return TypeFloat32, 0, true
	case bool:
		return TypeBool, 0, true
	case string:
		return TypeString, 0, true
	case uint64:
		return TypeUint64, 0, true
	case int64:
		return TypeInt64, 0, true
	case float64:
		return TypeFloat64, 0, true
	case []uint8:
		return TypeArray, TypeUint8, true
	case []int8:
		return TypeArray, TypeInt8, true
	case []uint16:
		return TypeArray, TypeUint16, true
	case []int16:
		return TypeArray, TypeInt16, true
	case []uint32:
		return TypeArray, TypeUint32, true
	case []int32:
		return TypeArray, TypeInt32, true
	case []float32:
		return TypeArray, TypeFloat32, true
	case []bool:
		return TypeArray, TypeBool, true
	case []string:
		return TypeArray, TypeString, true
	case []uint64:
		return TypeArray, TypeUint64, true
	case []int64:
		return TypeArray, TypeInt64, true
	case []float64:
		return TypeArray, TypeFloat64, true
	}
	return 0, 0, false
}

// AddTensor adds a tensor whose bytes are already encoded in typ's layout.
// shape is in ggml order (shape[0] is the row length).
func (w *Writer) AddTensor(name string, typ GGMLType, shape []uint64, data []byte) {
	size, ok := w.addInfo(name, typ, shape)
	if !ok {
		return
	}
	if uint64(len(data)) != size {
		w.fail(fmt.Errorf("gguf writer: tensor %q: %d bytes given, %s %v needs %d", name, len(data), typ, shape, size))
		return
	}
	w.tensors[len(w.tensors)-1].data = data
}

// AddTensorFunc adds a tensor whose bytes are produced at write time, so
// large generated models need not be held in memory. write must emit exactly
// the tensor's size in bytes.
func (w *Writer) AddTensorFunc(name string, typ GGMLType, shape []uint64, write func(io.Writer) error) {
	if _, ok := w.addInfo(name, typ, shape); ok {
		w.tensors[len(w.tensors)-1].write = write
	}
}

func (w *Writer) addInfo(name string, typ GGMLType, shape []uint64) (uint64, bool) {
	if w.names[name] {
		w.fail(fmt.Errorf("gguf writer: duplicate tensor %q", name))
		return 0, false
	}
	if len(shape) == 0 || len(shape) > maxDims {
		w.fail(fmt.Errorf("gguf writer: tensor %q: %d dimensions", name, len(shape)))
		return 0, false
	}
	n := uint64(1)
	for _, d := range shape {
		n *= d
	}
	if _, err := typ.RowBytes(shape[0]); err != nil {
		w.fail(fmt.Errorf("gguf writer: tensor %q: %w", name, err))
		return 0, false
	}
	size := n / typ.BlockSize() * typ.TypeSize()
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{info: TensorInfo{Name: name, Shape: append([]uint64(nil), shape...), Type: typ, Size: size}})
	return size, true
}

// WriteFile writes the file to path (created or truncated).
func (w *Writer) WriteFile(path string) error {
	fd, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gguf writer: %w", err)
	}
	if _, err := w.WriteTo(fd); err != nil {
		fd.Close()
		return fmt.Errorf("gguf writer %s: %w", path, err)
	}
	if err := fd.Close(); err != nil {
		return fmt.Errorf("gguf writer %s: %w", path, err)
	}
	return nil
}

// countingWriter tracks the absolute offset so padding can be computed.
type countingWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// WriteTo writes the file to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.Version < 1 || w.Version > 3 {
		return 0, fmt.Errorf("gguf writer: unsupported version %d", w.Version)
	}
	align := uint64(DefaultAlignment)
	if e, ok := w.vals["general.alignment"]; ok {
		a, isInt := toInt64(e.val)
		if !isInt || a <= 0 || a&(a-1) != 0 {
			return 0, fmt.Errorf("gguf writer: general.alignment %v is not a power of two", e.val)
		}
		align = uint64(a)
	}
	cw := &countingWriter{w: bufio.NewWriterSize(out, 1<<20)}
	v1 := w.Version == 1
	le := binary.LittleEndian
	var scratch [8]byte
	u32 := func(v uint32) { le.PutUint32(scratch[:4], v); cw.Write(scratch[:4]) }
	u64 := func(v uint64) { le.PutUint64(scratch[:8], v); cw.Write(scratch[:8]) }
	count := func(n uint64) {
		if v1 {
			u32(uint32(n))
		} else {
			u64(n)
		}
	}
	str := func(s string) { count(uint64(len(s))); io.WriteString(cw, s) }

	cw.Write([]byte(Magic))
	u32(w.Version)
	count(uint64(len(w.tensors)))
	count(uint64(len(w.keys)))
	for _, k := range w.keys {
		e := w.vals[k]
		str(k)
		u32(uint32(e.typ))
		if e.typ == TypeArray {
			u32(uint32(e.elem))
			writeArray(cw, e.val, count, str)
		} else {
			writeScalar(cw, e.val, str)
		}
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		str(t.Name)
		u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			count(d)
		}
		u32(uint32(t.Type))
		u64(t.Offset)
		off = alignUp(off+t.Size, align)
	}
	pad := func() {
		var zeros [64]byte
		for n := alignUp(uint64(cw.n), align) - uint64(cw.n); n > 0; {
			k := min(n, uint64(len(zeros)))
			cw.Write(zeros[:k])
			n -= k
		}
	}
	pad()
	for i := range w.tensors {
		t := &w.tensors[i]
		start := cw.n
		if t.write != nil {
			if err := t.write(cw); err != nil {
				return cw.n, fmt.Errorf("tensor %q: %w", t.info.Name, err)
			}
		} else {
			cw.Write(t.data)
		}
		if cw.err == nil && uint64(cw.n-start) != t.info.Size {
			return cw.n, fmt.Errorf("tensor %q: wrote %d bytes, expected %d", t.info.Name, cw.n-start, t.info.Size)
		}
		pad()
	}
	if cw.err != nil {
		return cw.n, cw.err
	}
	return cw.n, cw.w.Flush()
}

func writeScalar(w io.Writer, v any, str func(string)) {
	if s, ok := v.(string); ok {
		str(s)
		return
	}
	if b, ok := v.(bool); ok {
		if b {
			v = uint8(1)
		} else {
			v = uint8(0)
		}
	}
	_ = binary.Write(w, binary.LittleEndian, v)
}

func writeArray(w io.Writer, v any, count func(uint64), str func(string)) {
	switch x := v.(type) {
	case []string:
		count(uint64(len(x)))
		for _, s := range x {
			str(s)
		}
	case []bool:
		count(uint64(len(x)))
		b := make([]byte, len(x))
		for i, e := range x {
			if e {
				b[i] = 1
			}
		}
		w.Write(b)
	case []float32:
		count(uint64(len(x)))
		b := make([]byte, 4*len(x))
		for i, e := range x {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(e))
		}
		w.Write(b)
	case []int32:
		count(uint64(len(x)))
		b := make([]byte, 4*len(x))
		for i, e := range x {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(e))
		}
		w.Write(b)
	default:
		// Other numeric slices are rare in practice; binary.Write handles them.
		count(uint64(sliceLen(v)))
		_ = binary.Write(w, binary.LittleEndian, v)
	}
}

func sliceLen(v any) int {
	switch x := v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	}
	return 0
}
