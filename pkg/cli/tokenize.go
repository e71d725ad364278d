package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

func newTokenizeCmd() *cobra.Command {
	var modelDir string
	var addSpecial bool
	cmd := &cobra.Command{
		Use:   "tokenize",
		Short: "Tokenize a JSON array of strings read from stdin; print a JSON array of id arrays",
		Long: "Reads a JSON array of strings on stdin and prints a JSON array of token id arrays.\n" +
			"--model_dir is a directory with tokenizer.json (weights not needed), a .gguf file, a Hub id (org/name,\n" +
			"from the HF cache or downloaded as launch does), or builtin:tiny-random.\n" +
			"Special tokens are not added unless --add_special_tokens (HF add_special_tokens).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelDir == "" {
				return errors.New("--model_dir is required")
			}
			path, err := localModel(cmd.Context(), modelDir, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			tk, err := model.LoadTokenizer(path)
			if err != nil {
				return err
			}
			return tokenizer.EncodeJSON(tk, cmd.InOrStdin(), cmd.OutOrStdout(), addSpecial)
		},
	}
	cmd.Flags().StringVar(&modelDir, "model_dir", "", "model directory (tokenizer.json) or .gguf file")
	cmd.Flags().BoolVar(&addSpecial, "add_special_tokens", false, "add BOS/EOS as the tokenizer config says")
	return cmd
}
