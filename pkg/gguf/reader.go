package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"

	"golang.org/x/sys/unix"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the tensor data alignment when general.alignment is absent.
const DefaultAlignment = 32

// maxDims is GGML_MAX_DIMS: ggml tensors have at most four dimensions.
const maxDims = 4

// maxNesting bounds nested metadata arrays so garbage cannot recurse deeply.
const maxNesting = 8

// TensorInfo describes one tensor of the file.
type TensorInfo struct {
	Name string
	// Shape in ggml order: Shape[0] is the innermost (contiguous) dimension,
	// i.e. the row length of a matrix; a PyTorch [out, in] weight is [in, out].
	Shape  []uint64
	Type   GGMLType
	Offset uint64 // relative to the start of the data section
	Size   uint64 // bytes
}

// NumElements is the product of the shape.
func (t *TensorInfo) NumElements() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is an open GGUF file. Tensor data slices point into the mmap'd file
// and are valid until Close.
type File struct {
	Path       string
	Version    uint32
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset uint64 // absolute file offset of the data section

	data    []byte // whole file (mmap'd when opened with Open)
	mmapped bool
	keys    []string
	kv      map[string]any
	byName  map[string]int
}

// Open mmaps and parses the GGUF file at path.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("gguf %s: is a directory", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("gguf %s: file is %d bytes, too short for a GGUF header", path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("gguf %s: file too large to map (%d bytes)", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: mmap: %w", path, err)
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
// faulted back in if read again. A loader that copied the weights calls it
// so that the pages the copy touched, whole large folios at tensor edges
// and the header included, stop counting toward the process's RSS.
func (f *File) DropPages() {
	if f.mmapped && len(f.data) > 0 {
		_ = unix.Madvise(f.data, unix.MADV_DONTNEED) // best effort
	}
}

// Close unmaps the file. Tensor data slices must not be used afterwards.
func (f *File) Close() error {
	if f == nil || f.data == nil {
		return nil
	}
	data := f.data
	f.data = nil
	if f.mmapped {
		if err := unix.Munmap(data); err != nil {
			return fmt.Errorf("gguf %s: munmap: %w", f.Path, err)
		}
	}
	return nil
}

// Parse parses a complete GGUF image held in memory; name is used in errors.
// The returned File refers to data without copying tensor bytes.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{buf: data}
	f := &File{Path: name, data: data, kv: map[string]any{}, byName: map[string]int{}}
	if err := f.parse(d); err != nil {
		return nil, fmt.Errorf("gguf %s: %w", name, err)
	}
	return f, nil
}

func (f *File) parse(d *decoder) error {
	magic, err := d.bytes(4, "magic")
	if err != nil {
		return err
	}
	if string(magic) != Magic {
		return fmt.Errorf("not a GGUF file (magic %q)", magic)
	}
	if f.Version, err = d.u32("version"); err != nil {
		return err
	}
	switch {
	case f.Version >= 1 && f.Version <= 3:
	case f.Version&0xFFFF == 0 && bits.ReverseBytes32(f.Version) <= 3:
		return fmt.Errorf("big-endian GGUF (version %d byte-swapped) is not supported", bits.ReverseBytes32(f.Version))
	default:
		return fmt.Errorf("unsupported GGUF version %d", f.Version)
	}
	d.v1 = f.Version == 1
	nTensors, err := d.count("tensor count")
	if err != nil {
		return err
	}
	nKV, err := d.count("metadata count")
	if err != nil {
		return err
	}
	// Every key/value takes at least 4+4 bytes and every tensor info 4+4+4+8;
	// rejecting impossible counts up front keeps garbage from allocating.
	if nKV > uint64(d.remaining())/8 {
		return fmt.Errorf("metadata count %d exceeds what the file can hold", nKV)
	}
	f.keys = make([]string, 0, nKV)
	for i := uint64(0); i < nKV; i++ {
		key, err := d.str("metadata key")
		if err != nil {
			return fmt.Errorf("metadata entry %d: %w", i, err)
		}
		typ, err := d.u32("value type of " + key)
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(typ), key, 0)
		if err != nil {
			return err
		}
		if _, dup := f.kv[key]; dup {
			return fmt.Errorf("duplicate metadata key %q", key)
		}
		f.kv[key] = v
		f.keys = append(f.keys, key)
	}
	if nTensors > uint64(d.remaining())/20 {
		return fmt.Errorf("tensor count %d exceeds what the file can hold", nTensors)
	}
	f.Tensors = make([]TensorInfo, nTensors)
	for i := range f.Tensors {
		if err := d.tensorInfo(&f.Tensors[i], i); err != nil {
			return err
		}
		if _, dup := f.byName[f.Tensors[i].Name]; dup {
			return fmt.Errorf("duplicate tensor name %q", f.Tensors[i].Name)
		}
		f.byName[f.Tensors[i].Name] = i
	}
	f.Alignment = DefaultAlignment
	if _, present := f.kv["general.alignment"]; present {
		a, ok := f.Uint("general.alignment")
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 {
			return fmt.Errorf("general.alignment %v is not a power of two", f.kv["general.alignment"])
		}
		f.Alignment = a
	}
	f.DataOffset = alignUp(uint64(d.off), f.Alignment)
	fileSize := uint64(len(d.buf))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("tensor %q: data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		end := f.DataOffset + t.Offset + t.Size
		if end < t.Offset || end > fileSize {
			return fmt.Errorf("tensor %q (%s %v) needs bytes [%d, %d) but the file has %d: truncated", t.Name, t.Type, t.Shape,
				f.DataOffset+t.Offset, end, fileSize)
		}
	}
	return nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t (a slice of the mmap'd file).
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}

// decoder reads little-endian GGUF primitives with bounds checks.
type decoder struct {
	buf []byte
	off int
	v1  bool // GGUF v1 uses 32-bit counts and string lengths
}

var errTruncated = errors.New("unexpected end of file")

func (d *decoder) remaining() int { return len(d.buf) - d.off }

func (d *decoder) bytes(n uint64, what string) ([]byte, error) {
	if n > uint64(d.remaining()) {
		return nil, fmt.Errorf("reading %s (%d bytes at offset %d): %w", what, n, d.off, errTruncated)
	}
	b := d.buf[d.off : d.off+int(n)]
	d.off += int(n)
	return b, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.bytes(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.bytes(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a length or count: 32-bit in v1, 64-bit later.
func (d *decoder) count(what string) (uint64, error) {
	if d.v1 {
		v, err := d.u32(what)
		return uint64(v), err
	}
	return d.u64(what)
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.count(what + " length")
	if err != nil {
		return "", err
	}
	b, err := d.bytes(n, what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) value(t ValueType, key string, depth int) (any, error) {
	if t == TypeArray {
		return d.array(key, depth)
	}
	if t == TypeString {
		return d.str("value of " + key)
	}
	size := t.fixedSize()
	if size == 0 {
		return nil, fmt.Errorf("metadata %q: unknown value type %d", key, uint32(t))
	}
	b, err := d.bytes(uint64(size), "value of "+key)
	if err != nil {
		return nil, err
	}
	return decodeScalar(t, b), nil
}

func decodeScalar(t ValueType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0]
	case TypeInt8:
		return int8(b[0])
	case TypeBool:
		return b[0] != 0
	case TypeUint16:
		return le.Uint16(b)
	case TypeInt16:
		return int16(le.Uint16(b))
	case TypeUint32:
		return le.Uint32(b)
	case TypeInt32:
		return int32(le.Uint32(b))
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b))
	case TypeUint64:
		return le.Uint64(b)
	case TypeInt64:
		return int64(le.Uint64(b))
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b))
	}
	return nil
}

// array decodes an array into a typed Go slice ([]string, []int32, ...;
// nested arrays become []any).
func (d *decoder) array(key string, depth int) (any, error) {
	if depth >= maxNesting {
		return nil, fmt.Errorf("metadata %q: arrays nested deeper than %d", key, maxNesting)
	}
	et, err := d.u32("array type of " + key)
	if err != nil {
		return nil, err
	}
	n, err := d.count("array length of " + key)
	if err != nil {
		return nil, err
	}
	elem := ValueType(et)
	minSize := uint64(elem.fixedSize())
	switch elem {
	case TypeString:
		minSize = 4
	case TypeArray:
		minSize = 8
	}
	if minSize == 0 {
		return nil, fmt.Errorf("metadata %q: unknown array element type %d", key, et)
	}
	if n > uint64(d.remaining())/minSize {
		return nil, fmt.Errorf("metadata %q: array of %d %s needs more bytes than remain (%d at offset %d): %w",
			key, n, elem, d.remaining(), d.off, errTruncated)
	}
	if size := elem.fixedSize(); size > 0 {
		b, _ := d.bytes(n*uint64(size), key) // length checked above
		return decodeFixedArray(elem, b, int(n)), nil
	}
	if elem == TypeString {
		out := make([]string, n)
		for i := range out {
			if out[i], err = d.str(fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out := make([]any, n)
	for i := range out {
		if out[i], err = d.array(fmt.Sprintf("%s[%d]", key, i), depth+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeFixedArray(t ValueType, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append([]uint8(nil), b...)
	case TypeInt8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(b[i])
		}
		return out
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			out[i] = b[i] != 0
		}
		return out
	case TypeUint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(b[2*i:])
		}
		return out
	case TypeInt16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(b[2*i:]))
		}
		return out
	case TypeUint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(b[4*i:])
		}
		return out
	case TypeInt32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(b[4*i:]))
		}
		return out
	case TypeFloat32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return out
	case TypeUint64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(b[8*i:])
		}
		return out
	case TypeInt64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(b[8*i:]))
		}
		return out
	case TypeFloat64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return out
	}
	return nil
}

func (d *decoder) tensorInfo(t *TensorInfo, i int) error {
	var err error
	if t.Name, err = d.str(fmt.Sprintf("name of tensor %d", i)); err != nil {
		return err
	}
	nDims, err := d.u32("dimension count of tensor " + t.Name)
	if err != nil {
		return err
	}
	if nDims > maxDims {
		return fmt.Errorf("tensor %q: %d dimensions (at most %d)", t.Name, nDims, maxDims)
	}
	t.Shape = make([]uint64, nDims)
	elems := uint64(1)
	for j := range t.Shape {
		if t.Shape[j], err = d.count("shape of tensor " + t.Name); err != nil {
			return err
		}
		hi, lo := bits.Mul64(elems, t.Shape[j])
		if hi != 0 || lo > 1<<62 || int64(t.Shape[j]) < 0 {
			return fmt.Errorf("tensor %q: shape %v overflows", t.Name, t.Shape[:j+1])
		}
		elems = lo
	}
	typ, err := d.u32("type of tensor " + t.Name)
	if err != nil {
		return err
	}
	t.Type = GGMLType(typ)
	if !t.Type.Known() {
		return fmt.Errorf("tensor %q: unknown ggml type %d", t.Name, typ)
	}
	if t.Offset, err = d.u64("data offset of tensor " + t.Name); err != nil {
		return err
	}
	if nDims > 0 && t.Shape[0]%t.Type.BlockSize() != 0 {
		return fmt.Errorf("tensor %q: row length %d is not a multiple of the %s block size %d",
			t.Name, t.Shape[0], t.Type, t.Type.BlockSize())
	}
	if elems%t.Type.BlockSize() != 0 {
		return fmt.Errorf("tensor %q: %d elements is not a multiple of the %s block size", t.Name, elems, t.Type)
	}
	t.Size = elems / t.Type.BlockSize() * t.Type.TypeSize()
	return nil
}
