package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
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
		profile string
		cb      constrainedFlags
	)
	cmd := &cobra.Command{
		Use:   "bench-engine",
		Short: "Measure prefill and decode tokens/s of the engine (same method as llama.cpp's bench.mjs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("--model_dir is required")
			}
			stop, err := startCPUProfile(profile)
			if err != nil {
				return err
			}
			defer stop()
			var res map[string]any
			if cb.constrained > 0 {
				res, err = benchConstrained(cmd.Context(), path, threads, o, cb)
			} else {
				res, err = engine.BenchModel(cmd.Context(), path, threads, o)
			}
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
	f.IntVar(&o.Context, "context", 0, "also measure decode after a prompt of this many tokens (1 sequence and the largest --sequences count)")
	f.BoolVar(&o.Churn, "churn", false, "with --context: first run short requests through each long-context test's engine until every KV slot has been used, as in a server that has been running")
	f.BoolVar(&o.DistinctPrompts, "distinct_prompts", false, "decode tests: each sequence its own 16-token prompt (consecutive windows of the same walk) instead of bench.mjs's one prompt for all, as a server benchmark's prompts are")
	f.IntVar(&o.Repeat, "repeat", 1, "run each decode test this many times, each on a fresh engine, and report the rates over all of them (a longer measurement on a noisy host)")
	f.IntVar(&o.PrefillChunk, "prefill_chunk", 512, "prompt chunk of the prefill tests (llama.cpp's default n_ubatch, which bench.mjs and longctx.mjs use)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&o.MmapWeights, "mmap_weights", false, "compute from the file mapping instead of huge-page copies of the weights")
	f.StringVar(&profile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file (go tool pprof)")
	f.IntVar(&cb.constrained, "constrained", 0, "instead: the structured-output step test, this many of the largest --sequences count constrained by --schemas (json_schema)")
	f.StringVar(&cb.schemas, "schemas", "pkg/grammar/testdata/schemas", "with --constrained: directory of JSON Schema files, one per constrained request in turn")
	f.IntVar(&cb.rounds, "rounds", 4, "with --constrained: pairs of runs (plain, constrained), alternating")
	return cmd
}

// startCPUProfile writes a CPU profile to path until stop is called; an
// empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
