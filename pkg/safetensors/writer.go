package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// WriteTensor is one tensor to write, already in DType's encoding: either
// Data, or Fill which streams exactly Size bytes (so large generated
// models need not sit in memory).
type WriteTensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
	Fill  func(w io.Writer) error
}

func (t *WriteTensor) size() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n * int64(t.DType.Size())
}

// WriteFile writes tensors (in the given order) and metadata to path.
func WriteFile(path string, tensors []WriteTensor, metadata map[string]string) error {
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := uint64(0)
	for _, t := range tensors {
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors write %s: tensor %q: unknown dtype %q", path, t.Name, t.DType)
		}
		size := uint64(t.size())
		if t.Fill == nil && size != uint64(len(t.Data)) {
			return fmt.Errorf("safetensors write %s: tensor %q: %d bytes for %s %v", path, t.Name, len(t.Data), t.DType, t.Shape)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("safetensors write %s: duplicate tensor %q", path, t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		header[t.Name] = rawInfo{DType: t.DType, Shape: shape, DataOffsets: [2]uint64{off, off + size}}
		off += size
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors write %s: %w", path, err)
	}
	// The data section starts 8-byte aligned, as the reference writer does.
	for (len(hj)+8)%8 != 0 {
		hj = append(hj, ' ')
	}
	fd, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors write: %w", err)
	}
	bw := bufio.NewWriterSize(fd, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hj)))
	bw.Write(lenBuf[:])
	bw.Write(hj)
	for _, t := range tensors {
		if t.Fill == nil {
			bw.Write(t.Data)
			continue
		}
		cw := &countWriter{w: bw}
		if err := t.Fill(cw); err != nil {
			fd.Close()
			return fmt.Errorf("safetensors write %s: tensor %q: %w", path, t.Name, err)
		}
		if cw.n != t.size() {
			fd.Close()
			return fmt.Errorf("safetensors write %s: tensor %q: wrote %d bytes, want %d", path, t.Name, cw.n, t.size())
		}
	}
	if err := bw.Flush(); err != nil {
		fd.Close()
		return fmt.Errorf("safetensors write %s: %w", path, err)
	}
	if err := fd.Close(); err != nil {
		return fmt.Errorf("safetensors write %s: %w", path, err)
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
