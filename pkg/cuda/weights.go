package cuda

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/lightllm-go/lightllm/pkg/gguf"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/safetensors"
	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// The weights are read from the model's files here, not from the
// *model.Model, whose tensors are unexported. The names, layouts and RoPE
// conventions follow pkg/model's loader, whose tensor-name map
// (model.HFTensorName) and Llama-3 RoPE factors (model.Llama3FreqFactors)
// are called, not copied. TODO(model): an exported weight view on
// *model.Model would remove the remaining file reading here.

// hostTensor is one tensor as stored: type, PyTorch-order shape ([rows,
// cols] for a matrix) and its mmap'd bytes.
type hostTensor struct {
	name  string
	typ   tensor.DType
	shape []int
	data  []byte
}

// weightFile reads tensors by their GGUF name from a GGUF file or a Hugging
// Face directory.
type weightFile struct {
	path   string
	hf     *safetensors.Set
	gg     *gguf.File
	closer io.Closer
	// RoPE layout and frequencies, as pkg/model derives them.
	neox       bool
	freqFactor []float32
	ropeScale  float32
	freqScale  float32
}

func openWeights(path string, cfg model.Config) (*weightFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cuda: weights: %w", err)
	}
	w := &weightFile{path: path}
	if st.IsDir() {
		set, err := safetensors.OpenDir(path)
		if err != nil {
			return nil, fmt.Errorf("cuda: weights: %w", err)
		}
		w.hf, w.closer, w.neox = set, set, true
		if rs := cfg.RopeScaling; rs != nil && rs.Type == "llama3" {
			w.freqFactor = model.Llama3FreqFactors(rs, cfg.RopeTheta, cfg.HeadDim)
		}
	} else {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, fmt.Errorf("cuda: weights: %w", err)
		}
		w.gg, w.closer = f, f
		w.neox = cfg.Arch == "qwen2" || cfg.Arch == "qwen3"
		ff, err := w.optionalVector("rope_freqs.weight", cfg.HeadDim/2)
		if err != nil {
			f.Close()
			return nil, err
		}
		w.freqFactor = ff
	}
	w.ropeScale = float32(math.Pow(float64(float32(cfg.RopeTheta)), float64(float32(-2)/float32(cfg.HeadDim))))
	w.freqScale = 1
	if rs := cfg.RopeScaling; rs != nil && rs.Type == "linear" {
		w.freqScale = float32(1 / rs.Factor)
	}
	return w, nil
}

func (w *weightFile) Close() error { return w.closer.Close() }

// get returns the named tensor, or nil when the file has none.
func (w *weightFile) get(name string) (*hostTensor, error) {
	if w.gg != nil {
		ti, ok := w.gg.Tensor(name)
		if !ok {
			return nil, nil
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
		default:
			return nil, fmt.Errorf("cuda: %s: tensor %q has type %s (want f32, f16, bf16, q8_0, q4_0)", w.path, name, ti.Type)
		}
		shape := make([]int, len(ti.Shape))
		for i, d := range ti.Shape { // ggml lists the contiguous dimension first
			shape[len(shape)-1-i] = int(d)
		}
		return &hostTensor{name: name, typ: dt, shape: shape, data: w.gg.TensorData(ti)}, nil
	}
	hf := model.HFTensorName(name)
	info, data, f, ok := w.hf.Tensor(hf)
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
		return nil, fmt.Errorf("cuda: %s: tensor %q has dtype %s (want F32, F16, BF16)", f.Path, hf, info.DType)
	}
	shape := make([]int, len(info.Shape))
	for i, d := range info.Shape {
		shape[i] = int(d)
	}
	return &hostTensor{name: hf, typ: dt, shape: shape, data: data}, nil
}

// matrix returns a [rows x cols] tensor, checking shape and byte size.
func (w *weightFile) matrix(name string, rows, cols int) (*hostTensor, error) {
	t, err := w.get(name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("cuda: %s: missing tensor %q", w.path, name)
	}
	if len(t.shape) != 2 || t.shape[0] != rows || t.shape[1] != cols {
		return nil, fmt.Errorf("cuda: %s: tensor %q has shape %v, want [%d %d]", w.path, t.name, t.shape, rows, cols)
	}
	rb, err := t.typ.RowBytes(cols)
	if err != nil || rb*rows != len(t.data) {
		return nil, fmt.Errorf("cuda: %s: tensor %q: %d bytes for %d x %d %s", w.path, t.name, len(t.data), rows, cols, t.typ)
	}
	return t, nil
}

// vector decodes a 1-D tensor of n values to f32; nil when absent and
// optional.
func (w *weightFile) vector(name string, n int, optional bool) ([]float32, error) {
	t, err := w.get(name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("cuda: %s: missing tensor %q", w.path, name)
	}
	if len(t.shape) != 1 || t.shape[0] != n {
		return nil, fmt.Errorf("cuda: %s: tensor %q has shape %v, want [%d]", w.path, t.name, t.shape, n)
	}
	if want, err := t.typ.RowBytes(n); err != nil || want != len(t.data) {
		return nil, fmt.Errorf("cuda: %s: tensor %q: %d bytes for %d %s values", w.path, t.name, len(t.data), n, t.typ)
	}
	out := make([]float32, n)
	tensor.Dequantize(t.typ, t.data, out)
	return out, nil
}

func (w *weightFile) optionalVector(name string, n int) ([]float32, error) {
	return w.vector(name, n, true)
}

// matPart is one source matrix of a device matrix; device matrices stack
// their parts' rows (q|k|v for the fused QKV product, gate|up for the MLP).
type matPart struct {
	name string
	rows int
}

// devMat is a device matrix: parts stacked by rows, cols wide.
type devMat struct {
	parts []matPart
	cols  int
}

func (m devMat) rows() int {
	n := 0
	for _, p := range m.parts {
		n += p.rows
	}
	return n
}

// layerMats lists layer i's device matrices: QKV, output, gate|up, down.
func layerMats(c model.Config, i int) (qkv, wo, gu, down devMat) {
	p := fmt.Sprintf("blk.%d.", i)
	qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	qkv = devMat{[]matPart{{p + "attn_q.weight", qDim}, {p + "attn_k.weight", kvDim}, {p + "attn_v.weight", kvDim}}, c.Hidden}
	wo = devMat{[]matPart{{p + "attn_output.weight", c.Hidden}}, qDim}
	gu = devMat{[]matPart{{p + "ffn_gate.weight", c.FFN}, {p + "ffn_up.weight", c.FFN}}, c.Hidden}
	down = devMat{[]matPart{{p + "ffn_down.weight", c.Hidden}}, c.FFN}
	return
}

// hostLayer is a layer's small f32 vectors.
type hostLayer struct {
	attnNorm, ffnNorm []float32
	bias              []float32 // q|k|v biases concatenated (qwen2), nil otherwise
	qNorm, kNorm      []float32 // per-head norms (qwen3), nil otherwise
}

func (w *weightFile) layerVectors(c model.Config, i int) (hostLayer, error) {
	p := fmt.Sprintf("blk.%d.", i)
	qDim, kvDim := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	var hl hostLayer
	var err error
	if hl.attnNorm, err = w.vector(p+"attn_norm.weight", c.Hidden, false); err != nil {
		return hl, err
	}
	if hl.ffnNorm, err = w.vector(p+"ffn_norm.weight", c.Hidden, false); err != nil {
		return hl, err
	}
	if c.QKVBias {
		for _, b := range []struct {
			name string
			n    int
		}{{"attn_q.bias", qDim}, {"attn_k.bias", kvDim}, {"attn_v.bias", kvDim}} {
			v, err := w.vector(p+b.name, b.n, false)
			if err != nil {
				return hl, err
			}
			hl.bias = append(hl.bias, v...)
		}
	}
	if c.QKNorm {
		if hl.qNorm, err = w.vector(p+"attn_q_norm.weight", c.HeadDim, false); err != nil {
			return hl, err
		}
		if hl.kNorm, err = w.vector(p+"attn_k_norm.weight", c.HeadDim, false); err != nil {
			return hl, err
		}
	}
	return hl, nil
}

// convertRows encodes rows [r0, r1) of t (cols wide) as dt into dst, which
// must hold (r1-r0)*cols elements of dt. Same-type rows are copied; other
// types go through f32 (tmp holds one row).
func convertRows(dst []byte, t *hostTensor, r0, r1, cols int, dt dtype, tmp []float32) error {
	rb, err := t.typ.RowBytes(cols)
	if err != nil {
		return fmt.Errorf("cuda: tensor %q: %w", t.name, err)
	}
	out := cols * dt.size()
	if len(dst) < (r1-r0)*out || len(t.data) < r1*rb || len(tmp) < cols {
		return fmt.Errorf("cuda: tensor %q: conversion buffers too small", t.name)
	}
	if t.typ == dt.tensorType() {
		copy(dst, t.data[r0*rb:r1*rb])
		return nil
	}
	row := tmp[:cols]
	for r := r0; r < r1; r++ {
		tensor.Dequantize(t.typ, t.data[r*rb:(r+1)*rb], row)
		d := dst[(r-r0)*out : (r-r0+1)*out]
		switch dt {
		case dtF32:
			copy(d, tensor.F32Bytes(row))
		case dtF16:
			for i, v := range row {
				h := tensor.F32ToF16(v)
				d[2*i], d[2*i+1] = byte(h), byte(h>>8)
			}
		case dtBF16:
			for i, v := range row {
				h := tensor.F32ToBF16(v)
				d[2*i], d[2*i+1] = byte(h), byte(h>>8)
			}
		}
	}
	return nil
}
