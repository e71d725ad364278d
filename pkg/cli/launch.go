package cli

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/hub"
	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

func newLaunchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "launch --normal --model_dir DIR [flags]",
		Short: "Launch a server: every role as its own process, under a supervisor",
		Long: `Launch resolves the configuration once (derived defaults from the model and the
machine), saves it as <run_dir>/config.json, starts the roles in LightLLM's order
(metric → router + detokenizer → infer → apiserver → health), waiting for each to
report ready, and supervises them: a role that dies is restarted alone. SIGTERM or
Ctrl-C stops everything in order and removes the instance's shm files and sockets
(so does ` + "`lightllm stop`" + ` from another shell).

--model_dir is a Hugging Face directory, a .gguf file, a Hub id (org/name, downloaded
once into the HF cache; HF_HUB_OFFLINE=1 uses the cache only), or builtin:tiny-random.
Without --model_dir the server downloads and serves ` + hub.DefaultModel + `.

Flags are snake_case as LightLLM's; kebab-case spellings (vLLM's) are the same flags.`,
		Example: `  lightllm launch --model_dir ../shared/models/stories260K/hf --port 8080
  lightllm launch --model_dir Qwen/Qwen3-0.6B --host 0.0.0.0 --api_key "$KEY"
  lightllm launch --model_dir model.gguf --served_model_name mymodel --allowed_origins https://ui.example
  lightllm launch                       # downloads and serves ` + hub.DefaultModel,
		Args: cobra.NoArgs,
	}
	flags := config.RegisterFlags(cmd.Flags())
	normal := cmd.Flags().Bool("normal", true, "normal mode: every role on this node (the only mode so far)")
	prepare := cmd.Flags().Bool("prepare-only", false, "resolve the configuration into the run dir, create the shm dir, and exit (the systemd instance unit)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !*normal {
			return errors.New("only --normal mode is supported")
		}
		return supervisor.Launch(cmd.Context(), flags, supervisor.LaunchOptions{
			PrepareOnly: *prepare, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
			Resolve: hubResolveOptions(cmd.Context(), cmd.ErrOrStderr()),
		})
	}
	return cmd
}

// hubResolveOptions lets --model_dir name a Hugging Face Hub model (and an
// empty --model_dir mean hub.DefaultModel): the launcher downloads it once
// into the shared HF cache, and the roles read the resolved local path from
// the saved configuration.
func hubResolveOptions(ctx context.Context, progress io.Writer) config.ResolveOptions {
	return config.ResolveOptions{
		DefaultModel: func() (string, error) { return hub.DefaultModel, nil },
		ResolveModel: func(spec string) (string, error) {
			return hub.Resolve(ctx, spec, hub.Options{Progress: hub.NewReporter(progress, hub.ReporterOptions{})})
		},
	}
}
