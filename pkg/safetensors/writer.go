package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
)

// WriteTensor is one tensor to write; Data is already in DType's encoding.
type WriteTensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
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
		n := uint64(1)
		for _, d := range t.Shape {
			n *= uint64(d)
		}
		if n*t.DType.Size() != uint64(len(t.Data)) {
			return fmt.Errorf("safetensors write %s: tensor %q: %d bytes for %s %v", path, t.Name, len(t.Data), t.DType, t.Shape)
		}
		if _, dup := header[t.Name]; dup {
			return fmt.Errorf("safetensors write %s: duplicate tensor %q", path, t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		header[t.Name] = rawInfo{DType: t.DType, Shape: shape, DataOffsets: [2]uint64{off, off + uint64(len(t.Data))}}
		off += uint64(len(t.Data))
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
		bw.Write(t.Data)
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
		if len(cur) > 0 && size+len(t.Data) > maxShardBytes {
			shards = append(shards, cur)
			cur, size = nil, 0
		}
		cur = append(cur, t)
		size += len(t.Data)
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
			total += len(t.Data)
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
