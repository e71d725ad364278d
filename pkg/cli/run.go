package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

func newRunCmd() *cobra.Command {
	var (
		o     engine.GenerateOptions
		stops string
	)
	p := sampler.DefaultParams()
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Generate text for one prompt and print only the generated text",
		Long: "Loads a model (Hugging Face directory, .gguf file or Hub id, as launch resolves it), generates for --prompt and prints the\n" +
			"generated text to stdout. An empty prompt means BOS only. --temperature 0 (the default) is greedy.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ModelPath == "" {
				return errors.New("--model_dir is required")
			}
			path, err := localModel(cmd.Context(), o.ModelPath, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			o.ModelPath = path
			ids, err := parseIDs(stops)
			if err != nil {
				return fmt.Errorf("--stop_token_ids: %w", err)
			}
			p.StopTokenIDs = ids
			p.DoSample = p.Temperature > 0 // 0 means greedy; Validate rejects negatives
			o.Params = p
			out := cmd.OutOrStdout()
			if err := engine.Generate(cmd.Context(), o, out); err != nil {
				return err
			}
			if f, ok := out.(*os.File); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
					fmt.Fprintln(out) // end the line on a terminal only: piped output is the text alone
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ModelPath, "model_dir", "", "model: Hugging Face directory, .gguf file, or builtin:tiny-random (random weights, meaningless text)")
	f.StringVar(&o.Prompt, "prompt", "", "prompt text (empty: BOS only)")
	f.BoolVar(&o.Chat, "chat", false, "render the prompt as a user message with the model's chat template")
	f.IntVar(&o.Threads, "threads", 0, "forward-pass threads (0: all cores)")
	f.IntVar(&p.MaxNewTokens, "max_new_tokens", p.MaxNewTokens, "maximum generated tokens (clamped to the context)")
	f.IntVar(&p.MinNewTokens, "min_new_tokens", p.MinNewTokens, "EOS/stop ids are suppressed before this many tokens")
	f.Float32Var(&p.Temperature, "temperature", 0, "sampling temperature; 0 = greedy")
	f.Float32Var(&p.TopP, "top_p", p.TopP, "nucleus sampling mass, in (0, 1]")
	f.IntVar(&p.TopK, "top_k", p.TopK, "keep the k most likely tokens; -1 = all")
	f.Float32Var(&p.RepetitionPenalty, "repetition_penalty", p.RepetitionPenalty, "repetition penalty (>= 1)")
	f.Float32Var(&p.PresencePenalty, "presence_penalty", p.PresencePenalty, "presence penalty (negative favours repeats)")
	f.Float32Var(&p.FrequencyPenalty, "frequency_penalty", p.FrequencyPenalty, "frequency penalty (negative favours repeats)")
	f.Int64Var(&p.Seed, "seed", p.Seed, "random seed; -1 = random")
	f.BoolVar(&p.IgnoreEOS, "ignore_eos", false, "do not stop at the model's EOS ids")
	f.StringVar(&stops, "stop_token_ids", "", "comma-separated token ids that end generation (besides EOS)")
	return cmd
}

// parseIDs parses "1, 2,3" into token ids.
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q is not a token id", f)
		}
		ids = append(ids, int32(v))
	}
	return ids, nil
}
