package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/lightllm-go/lightllm/pkg/hub"
	"github.com/lightllm-go/lightllm/pkg/model/builtin"
)

// localModel turns --model_dir into a local path as `launch` does: a path
// that exists or a builtin spec is kept; anything else is a Hub id, found in
// the HF cache or downloaded into it (HF_HUB_OFFLINE=1: the cache only).
func localModel(ctx context.Context, spec string, progress io.Writer) (string, error) {
	if builtin.IsSpec(spec) {
		return spec, nil
	}
	if _, err := os.Stat(spec); err == nil {
		return spec, nil
	}
	dir, err := hub.Resolve(ctx, spec, hub.Options{Progress: hub.NewReporter(progress, hub.ReporterOptions{})})
	if err != nil {
		return "", fmt.Errorf("model %s: %w", spec, err)
	}
	return dir, nil
}
