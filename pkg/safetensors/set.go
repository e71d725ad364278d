package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// IndexName is the file that maps tensor names to shards.
const IndexName = "model.safetensors.index.json"

// Set is the weights of one model directory: one file or several shards.
type Set struct {
	Files []*File
	where map[string]tensorRef
}

type tensorRef struct {
	file *File
	idx  int
}

// OpenDir opens the weights in dir: the shards listed by
// model.safetensors.index.json, else model.safetensors, else every
// *.safetensors file in the directory.
func OpenDir(dir string) (*Set, error) {
	var paths []string
	idxPath := filepath.Join(dir, IndexName)
	if b, err := os.ReadFile(idxPath); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("safetensors %s: %w", idxPath, err)
		}
		if len(idx.WeightMap) == 0 {
			return nil, fmt.Errorf("safetensors %s: empty weight_map", idxPath)
		}
		seen := map[string]bool{}
		for _, shard := range idx.WeightMap {
			if filepath.Base(shard) != shard {
				return nil, fmt.Errorf("safetensors %s: shard name %q is not a plain file name", idxPath, shard)
			}
			if !seen[shard] {
				seen[shard] = true
				paths = append(paths, filepath.Join(dir, shard))
			}
		}
		sort.Strings(paths)
		s, err := OpenFiles(paths)
		if err != nil {
			return nil, err
		}
		for name, shard := range idx.WeightMap {
			ref, ok := s.where[name]
			if !ok || filepath.Base(ref.file.Path) != shard {
				s.Close()
				return nil, fmt.Errorf("safetensors %s: tensor %q listed in shard %s is not there", idxPath, name, shard)
			}
		}
		return s, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return OpenFiles([]string{single})
	}
	paths, _ = filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(paths) == 0 {
		return nil, fmt.Errorf("safetensors: no model.safetensors, %s or *.safetensors in %s", IndexName, dir)
	}
	return OpenFiles(paths)
}

// OpenFiles opens the given files as one set; a tensor name may appear once.
func OpenFiles(paths []string) (*Set, error) {
	s := &Set{where: map[string]tensorRef{}}
	for _, p := range paths {
		f, err := Open(p)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Files = append(s.Files, f)
		for i := range f.Tensors {
			name := f.Tensors[i].Name
			if prev, dup := s.where[name]; dup {
				s.Close()
				return nil, fmt.Errorf("safetensors: tensor %q is in both %s and %s", name, prev.file.Path, p)
			}
			s.where[name] = tensorRef{f, i}
		}
	}
	return s, nil
}

// Tensor finds a tensor by name and returns its info, bytes and file.
func (s *Set) Tensor(name string) (*TensorInfo, []byte, *File, bool) {
	ref, ok := s.where[name]
	if !ok {
		return nil, nil, nil, false
	}
	t := &ref.file.Tensors[ref.idx]
	return t, ref.file.TensorData(t), ref.file, true
}

// Names lists every tensor name, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.where))
	for n := range s.where {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DropPages drops every file's pages from this process (File.DropPages).
func (s *Set) DropPages() {
	for _, f := range s.Files {
		f.DropPages()
	}
}

// Close unmaps every file.
func (s *Set) Close() error {
	var first error
	for _, f := range s.Files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.Files = nil
	return first
}
