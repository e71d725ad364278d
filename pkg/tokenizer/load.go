package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/gguf"
)

// Load opens the tokenizer of a model: a directory holding tokenizer.json
// (model weights are not needed), a tokenizer.json file, or a .gguf file
// with an embedded vocabulary.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	if st.IsDir() {
		return LoadDir(path)
	}
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		return LoadFile(path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	defer f.Close()
	t, err := FromGGUFFile(f)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// EncodeJSON reads a JSON array of strings from r and writes the JSON array
// of their id arrays to w (one line), encoding each text with Encode.
func EncodeJSON(t *Tokenizer, r io.Reader, w io.Writer, addSpecial bool) error {
	var texts []string
	if err := json.NewDecoder(r).Decode(&texts); err != nil {
		return fmt.Errorf("read input: want a JSON array of strings: %w", err)
	}
	out := make([][]int32, len(texts))
	for i, s := range texts {
		out[i] = t.Encode(s, addSpecial)
	}
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(out); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
