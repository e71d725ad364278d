package model

import (
	"fmt"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/safetensors"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// rawTensor is a tensor as stored: type, shape in PyTorch order ([rows,
// cols] for a matrix) and its mmap'd bytes.
type rawTensor struct {
	name  string // the name in the file
	typ   tensor.DType
	shape []int
	data  []byte
	// mapped: data points into a read-only file mapping, whose pages may
	// be dropped from this process once the data is copied elsewhere.
	mapped bool
}

// weightSource finds tensors by their GGUF name ("blk.3.attn_q.weight");
// sources in other layouts translate the name. A missing tensor is
// (nil, nil); an unusable one an error naming file and tensor.
type weightSource interface {
	get(name string) (*rawTensor, error)
	path() string
	// totals counts the tensors and their bytes as stored (for progress).
	totals() (tensors int, bytes int64)
}

type ggufSource struct{ f *gguf.File }

func (s ggufSource) path() string { return s.f.Path }

func (s ggufSource) totals() (int, int64) {
	var n int64
	for i := range s.f.Tensors {
		n += int64(len(s.f.TensorData(&s.f.Tensors[i])))
	}
	return len(s.f.Tensors), n
}

func (s ggufSource) get(name string) (*rawTensor, error) {
	ti, ok := s.f.Tensor(name)
	if !ok {
		return nil, nil
	}
	// ggml lists the contiguous dimension first.
	shape := make([]int, len(ti.Shape))
	for i, d := range ti.Shape {
		shape[len(shape)-1-i] = int(d)
	}
	var dt tensor.DType
	switch ti.Type {
	case gguf.F32:
		dt = tensor.F32
	case gguf.F16:
		dt = tensor.F16
	case gguf.BF16:
		dt = tensor.BF16
	case gguf.Q8_0:
		dt = tensor.Q8_0
	case gguf.Q4_0:
		dt = tensor.Q4_0
	case gguf.Q4_K:
		dt = tensor.Q4_K
	case gguf.Q5_K:
		dt = tensor.Q5_K
	case gguf.Q6_K:
		dt = tensor.Q6_K
	case gguf.Q4_1:
		dt = tensor.Q4_1
	case gguf.Q5_0:
		dt = tensor.Q5_0
	case gguf.Q5_1:
		dt = tensor.Q5_1
	case gguf.Q2_K:
		dt = tensor.Q2_K
	case gguf.Q3_K:
		dt = tensor.Q3_K
	case gguf.IQ4_NL:
		dt = tensor.IQ4_NL
	case gguf.IQ4_XS:
		dt = tensor.IQ4_XS
	case gguf.MXFP4:
		dt = tensor.MXFP4
	default:
		return nil, fmt.Errorf("%s: tensor %q has type %s, which is not supported (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4)",
			s.f.Path, name, ti.Type)
	}
	return &rawTensor{name: name, typ: dt, shape: shape, data: s.f.TensorData(ti), mapped: s.f.Mapped()}, nil
}

type hfSource struct {
	set *safetensors.Set
	dir string
	fam *family // names the tensors
}

func (s hfSource) path() string { return s.dir }

func (s hfSource) totals() (int, int64) {
	var count int
	var n int64
	for _, f := range s.set.Files {
		count += len(f.Tensors)
		for i := range f.Tensors {
			n += int64(len(f.TensorData(&f.Tensors[i])))
		}
	}
	return count, n
}

func (s hfSource) get(name string) (*rawTensor, error) {
	if s.fam.hfGet != nil {
		if t, ok, err := s.fam.hfGet(s, name); ok {
			return t, err
		}
	}
	return s.raw(s.fam.hfName(name))
}

// raw returns the Hugging Face tensor hf as stored ((nil, nil) if absent).
func (s hfSource) raw(hf string) (*rawTensor, error) {
	info, data, f, ok := s.set.Tensor(hf)
	if !ok {
		return nil, nil
	}
	var dt tensor.DType
	switch info.DType {
	case safetensors.F32:
		dt = tensor.F32
	case safetensors.F16:
		dt = tensor.F16
	case safetensors.BF16:
		dt = tensor.BF16
	default:
		return nil, fmt.Errorf("%s: tensor %q has dtype %s, which is not supported (F32, F16, BF16)", f.Path, hf, info.DType)
	}
	shape := make([]int, len(info.Shape))
	for i, d := range info.Shape {
		shape[i] = int(d)
	}
	return &rawTensor{name: hf, typ: dt, shape: shape, data: data, mapped: f.Mapped()}, nil
}

// loader reads tensors from a source, checking shapes.
type loader struct {
	src    weightSource
	counts map[tensor.DType]int64 // matrix bytes per type, for Config.DType
	// arena, when not nil, receives a copy of every matrix the forward
	// pass streams (tensor.WeightArena says why).
	arena *tensor.WeightArena
	// shiftNorms adds 1 to every *norm.weight (family.normShift, HF only).
	shiftNorms bool

	progress  func(LoadProgress) // nil: nobody listens
	done      LoadProgress
	splitting bool // inside splitMatrix: its parts are one tensor
}

func newLoader(src weightSource, arena *tensor.WeightArena, progress func(LoadProgress)) *loader {
	l := &loader{src: src, counts: map[tensor.DType]int64{}, arena: arena, progress: progress}
	if progress != nil {
		l.done.TotalTensors, l.done.TotalBytes = src.totals()
	}
	return l
}

// tick counts a tensor (or a split part: its bytes only) as loaded.
func (l *loader) tick(t *rawTensor) {
	if l.progress == nil {
		return
	}
	if !l.splitting {
		l.done.Tensors++
	}
	l.done.Bytes += int64(len(t.data))
	if l.done.TotalBytes > 0 { // a converted tensor's bytes differ from the file's
		l.done.Bytes = min(l.done.Bytes, l.done.TotalBytes)
	}
	if l.arena != nil {
		l.done.CopiedBytes = l.arena.Copied()
	}
	l.progress(l.done)
}

// finished reports the end of the load.
func (l *loader) finished() {
	if l.progress == nil {
		return
	}
	l.done.Done = true
	l.progress(l.done)
}

func (l *loader) need(name string) (*rawTensor, error) {
	t, err := l.src.get(name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%s: missing tensor %q", l.src.path(), nameFor(l.src, name))
	}
	return t, nil
}

func nameFor(src weightSource, name string) string {
	if hs, ok := src.(hfSource); ok {
		return hs.fam.hfName(name)
	}
	return name
}

// dropFilePages calls drop, which unmaps the source files' pages, when
// the matrices live in the arena; with weights computed from the mapping
// (no arena) the pages stay mapped.
func (l *loader) dropFilePages(drop func()) {
	if l.arena != nil {
		drop()
	}
}

// matrix loads a [rows x cols] weight as a view over the file's bytes.
func (l *loader) matrix(name string, rows, cols int) (*tensor.Matrix, error) {
	t, err := l.need(name)
	if err != nil {
		return nil, err
	}
	return l.asMatrix(t, rows, cols, true)
}

// asMatrix makes a matrix of t; streamed says the forward pass reads all
// of it every step (not so the embedding table, read a row per token),
// which earns it a copy in the arena; a table that is only gathered from is
// left in the file. q4_0 and q4_K matrices are repacked at load
// (tensor.NewMatrixIn) and need no copy of their own.
func (l *loader) asMatrix(t *rawTensor, rows, cols int, streamed bool) (*tensor.Matrix, error) {
	if len(t.shape) != 2 || t.shape[0] != rows || t.shape[1] != cols {
		return nil, fmt.Errorf("%s: tensor %q has shape %v, want [%d %d]", l.src.path(), t.name, t.shape, rows, cols)
	}
	var arena *tensor.WeightArena // q4_0's and q4_K's repacked copies go there
	var m *tensor.Matrix
	var err error
	if streamed {
		arena = l.arena
		m, err = tensor.NewMatrixIn(arena, t.typ, rows, cols, t.data)
	} else {
		m, err = tensor.NewGatherMatrix(t.typ, rows, cols, t.data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", l.src.path(), t.name, err)
	}
	switch {
	case m.Repacked():
		// MatMul reads the repacked copy: the file's pages need not stay.
		if arena != nil && t.mapped {
			arena.Release(m.Data)
		}
	case arena != nil && t.typ != tensor.Q4_0:
		m.Data = arena.Copy(m.Data, t.mapped)
	}
	l.counts[t.typ] += int64(len(t.data))
	l.tick(t)
	return m, nil
}

// splitPart is one matrix cut from the rows of a fused tensor.
type splitPart struct {
	dst  **tensor.Matrix
	rows int
}

// splitMatrix loads a fused [sum(rows) x cols] weight as consecutive
// row blocks, one matrix each.
func (l *loader) splitMatrix(name string, cols int, parts []splitPart) error {
	t, err := l.need(name)
	if err != nil {
		return err
	}
	total := 0
	for _, p := range parts {
		total += p.rows
	}
	if len(t.shape) != 2 || t.shape[0] != total || t.shape[1] != cols {
		return fmt.Errorf("%s: tensor %q has shape %v, want [%d %d]", l.src.path(), t.name, t.shape, total, cols)
	}
	rb, err := t.typ.RowBytes(cols)
	if err != nil || rb*total != len(t.data) {
		return fmt.Errorf("%s: tensor %q: %d bytes for %d x %d %s", l.src.path(), t.name, len(t.data), total, cols, t.typ)
	}
	r0 := 0
	l.splitting = true
	defer func() { l.splitting = false }()
	for _, p := range parts {
		sub := *t
		sub.shape = []int{p.rows, cols}
		sub.data = t.data[r0*rb : (r0+p.rows)*rb]
		if *p.dst, err = l.asMatrix(&sub, p.rows, cols, true); err != nil {
			return err
		}
		r0 += p.rows
	}
	l.splitting = false
	l.done.Tensors++
	return nil
}

// vector loads a 1-D tensor of n values as float32 (norm weights and
// biases are small, so they are decoded once).
func (l *loader) vector(name string, n int) ([]float32, error) {
	t, err := l.need(name)
	if err != nil {
		return nil, err
	}
	return l.asVector(t, n)
}

func (l *loader) asVector(t *rawTensor, n int) ([]float32, error) {
	if len(t.shape) != 1 || t.shape[0] != n {
		return nil, fmt.Errorf("%s: tensor %q has shape %v, want [%d]", l.src.path(), t.name, t.shape, n)
	}
	if t.typ.Quantized() {
		if n%tensor.QK != 0 {
			return nil, fmt.Errorf("%s: tensor %q: %s vector of %d values", l.src.path(), t.name, t.typ, n)
		}
	}
	want, err := t.typ.RowBytes(n)
	if err != nil || want != len(t.data) {
		return nil, fmt.Errorf("%s: tensor %q: %d bytes for %d %s values", l.src.path(), t.name, len(t.data), n, t.typ)
	}
	out := make([]float32, n)
	tensor.Dequantize(t.typ, t.data, out)
	if l.shiftNorms && strings.HasSuffix(t.name, "norm.weight") {
		shiftNorm(out, t.typ)
	}
	l.tick(t)
	return out, nil
}

// shiftNorm adds 1 to norm weights stored as typ the way llama.cpp's
// converter does (data_torch + 1 in the tensor's own dtype): an f16
// tensor's sums are rounded to f16; bf16 tensors are widened to f32 first.
func shiftNorm(v []float32, typ tensor.DType) {
	for i := range v {
		v[i]++
		if typ == tensor.F16 {
			v[i] = tensor.F16ToF32(tensor.F32ToF16(v[i]))
		}
	}
}

// optionalVector loads a vector if present.
func (l *loader) optionalVector(name string, n int) ([]float32, error) {
	t, err := l.src.get(name)
	if err != nil || t == nil {
		return nil, err
	}
	return l.asVector(t, n)
}
