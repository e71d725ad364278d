package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/hub"
)

func newPullCmd() *cobra.Command {
	var cacheDir string
	cmd := &cobra.Command{
		Use:   "pull [MODEL]",
		Short: "Download a model from the Hugging Face Hub without serving it",
		Long: `Download a model into the Hugging Face cache (shared with Python's huggingface_hub)
and print its local path. MODEL is org/name[@revision][:file.gguf]; without it the
default model (` + hub.DefaultModel + `) is pulled. Only the files the engine loads are
fetched; an interrupted pull resumes where it stopped.

Environment: HF_TOKEN (gated/private models), HF_ENDPOINT (mirror), HF_HOME or
HF_HUB_CACHE (cache location), HF_HUB_OFFLINE=1 (check the cache only).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := hub.DefaultModel
			if len(args) == 1 {
				spec = args[0]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			path, err := hub.Resolve(ctx, spec, hub.Options{
				CacheDir: cacheDir,
				Update:   true,
				Progress: hub.NewReporter(cmd.ErrOrStderr(), hub.ReporterOptions{}),
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	cmd.Flags().StringVar(&cacheDir, "cache_dir", "", "hub cache folder (default $HF_HUB_CACHE or $HF_HOME/hub)")
	return cmd
}
