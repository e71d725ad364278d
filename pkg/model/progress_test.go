package model

import (
	"path/filepath"
	"testing"
)

// TestLoadProgress: Progress hears every tensor of the file, in growing
// counts, then once with Done; both formats.
func TestLoadProgress(t *testing.T) {
	dir := filepath.Join(modelsDir(t), "stories260K")
	for _, path := range []string{filepath.Join(dir, "stories260K-f32.gguf"), filepath.Join(dir, "hf")} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var seen []LoadProgress
			m, err := Load(path, LoadOptions{NoTokenizer: true, Progress: func(p LoadProgress) { seen = append(seen, p) }})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if len(seen) < 2 {
				t.Fatalf("%d progress calls", len(seen))
			}
			last := seen[len(seen)-1]
			if !last.Done || last.TotalTensors == 0 || last.TotalBytes == 0 {
				t.Fatalf("last call %+v: want Done with totals", last)
			}
			for i, p := range seen[:len(seen)-1] {
				if p.Done || p.Tensors > p.TotalTensors || p.Bytes > p.TotalBytes || (i > 0 && (p.Tensors < seen[i-1].Tensors || p.Bytes < seen[i-1].Bytes)) {
					t.Fatalf("call %d %+v after %+v", i, p, seen[max(i-1, 0)])
				}
			}
			// Every tensor of stories260K is used (no rope_freqs, untied output).
			if last.Tensors != last.TotalTensors || last.Bytes != last.TotalBytes {
				t.Errorf("loaded %d of %d tensors, %d of %d bytes", last.Tensors, last.TotalTensors, last.Bytes, last.TotalBytes)
			}
		})
	}
}
