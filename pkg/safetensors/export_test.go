package safetensors

import (
	"encoding/json"
	"fmt"
	"os"
)

// Used only by tests (issue 17: kept out of the shipped binaries).

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
