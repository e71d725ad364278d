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

// WriteSharded splits tensors into shards of at most maxShardBytes (at least
// one tensor each) named model-0000i-of-0000n.safetensors, and writes the
// index file.
func WriteSharded(dir string, tensors []WriteTensor, maxShardBytes int) error {
	var shards [][]WriteTensor
	var cur []WriteTensor
	size := 0
	for _, t := range tensors {
		if len(cur) > 0 && size+int(t.size()) > maxShardBytes {
			shards = append(shards, cur)
			cur, size = nil, 0
		}
		cur = append(cur, t)
		size += int(t.size())
	}
	if len(cur) > 0 {
		shards = append(shards, cur)
	}
	weightMap := map[string]string{}
	total := 0
	for i, sh := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := WriteFile(dir+"/"+name, sh, map[string]string{"format": "pt"}); err != nil {
			return err
		}
		for _, t := range sh {
			weightMap[t.Name] = name
			total += int(t.size())
		}
	}
	idx := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(dir+"/"+IndexName, b, 0o644); err != nil {
		return fmt.Errorf("safetensors write index: %w", err)
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
