package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/engine"
)

func newBenchEngineCmd() *cobra.Command {
	var (
		path    string
		threads int
		o       engine.BenchOptions
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "bench-engine",
		Short: "Measure prefill and decode tokens/s of the engine (same method as llama.cpp's bench.mjs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("--model_dir is required")
			}
			res, err := engine.BenchModel(cmd.Context(), path, threads, o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := json.Marshal(res)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(out, string(b))
				return err
			}
			keys := make([]string, 0, len(res))
			for k := range res {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(out, "%-20s %v\n", k, res[k])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "model_dir", "", "model: Hugging Face directory or .gguf file")
	f.IntVar(&threads, "threads", 1, "forward-pass threads (bench.mjs default 1; 0: all cores)")
	f.IntVar(&o.PromptTokens, "prompt_tokens", 512, "prompt length of the prefill test")
	f.IntVar(&o.GenTokens, "gen_tokens", 64, "tokens generated per sequence in the decode tests")
	f.IntSliceVar(&o.Sequences, "sequences", []int{1, 4, 16}, "decode tests with this many sequences at once")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
