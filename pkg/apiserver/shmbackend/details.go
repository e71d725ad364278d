package shmbackend

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/config"
)

// modelDetails describes the model at path for ollama clients: format,
// architecture, data type and context length from its config, size and
// modification time from its weight files. What cannot be read stays zero
// (a builtin model has no files).
func modelDetails(path string) apiserver.ModelDetails {
	var d apiserver.ModelDetails
	if info, err := config.ReadModelInfo(path); err == nil {
		d.Format, d.Family, d.DType, d.ContextLength = info.Format, info.Arch, info.DType, info.ContextLength
		if d.Format == config.FormatHF {
			d.Format = "safetensors"
		}
	}
	add := func(fi os.FileInfo) {
		d.SizeBytes += fi.Size()
		if fi.ModTime().After(d.ModifiedAt) {
			d.ModifiedAt = fi.ModTime()
		}
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		d.ModifiedAt = time.Now()
	case !st.IsDir():
		add(st)
	default:
		entries, _ := os.ReadDir(path)
		for _, e := range entries {
			n := e.Name()
			if !strings.HasSuffix(n, ".safetensors") && !strings.HasSuffix(n, ".gguf") && !strings.HasSuffix(n, ".bin") {
				continue
			}
			if fi, err := os.Stat(filepath.Join(path, n)); err == nil { // follows links, as the loader does
				add(fi)
			}
		}
	}
	return d
}
