package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/grammar"
	"github.com/lightllm-go/lightllm/pkg/model"
)

func newBenchGrammarCmd() *cobra.Command {
	var tokDir, corpus, profile, maskbench string
	var random, maxTokens, procs, maxString, maxItems, maxWS int
	var seed uint64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench-grammar",
		Short: "Measure structured-output mask latency over a JSON Schema corpus",
		Long: "Compiles every schema of --corpus (a directory of *.json), forces each schema's \"examples\"\n" +
			"through the mask token by token, then samples --random generations uniformly among the allowed\n" +
			"tokens. Prints mask time per token and time to first mask (compile + first mask) as p50/p99/p99.9,\n" +
			"wall clock and CPU time of the measuring thread, and the share of forced tokens.\n" +
			"With --maskbench FILE (JSON lines from scripts/maskbench-prep.py) it runs MaskBench's test instead:\n" +
			"every test instance forced through the mask, schemas passing, instances wrongly accepted or rejected.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tokDir == "" {
				return errors.New("--tokenizer is required")
			}
			runtime.GOMAXPROCS(procs)
			tk, err := model.LoadTokenizer(tokDir)
			if err != nil {
				return err
			}
			var schemas []grammar.BenchSchema
			if maskbench == "" {
				if schemas, err = grammar.LoadBenchCorpus(corpus); err != nil {
					return err
				}
			}
			v := grammar.VocabFromTokenizer(tk)
			// After the per-tokenizer setup: the profile shows the run.
			stop, err := startCPUProfile(profile)
			if err != nil {
				return err
			}
			defer stop()
			opts := grammar.Options{MaxStringLength: maxString, MaxItems: maxItems, MaxWhitespace: maxWS}
			if maskbench != "" {
				return runMaskBench(cmd, maskbench, v, func(s string) []int32 { return tk.Encode(s, false) }, opts, asJSON)
			}
			rep, err := grammar.Bench(grammar.BenchConfig{Vocab: v, Encode: func(s string) []int32 { return tk.Encode(s, false) },
				Corpus: schemas, RandomRuns: random, MaxTokens: maxTokens, Seed: seed,
				Options: opts})
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "schemas %d (refused %d), vocab %d, masks %d, tokens %d, forced %.1f%%, random runs stopped %d/%d, GOMAXPROCS %d\n",
				rep.Schemas, rep.Refused, v.Size(), rep.Mask.N, rep.Tokens, 100*float64(rep.Forced)/float64(max(rep.Mask.N, 1)), rep.RandomStops, rep.RandomRuns, procs)
			fmt.Fprintf(out, "mask per token  wall p50 %v p99 %v p99.9 %v max %v | cpu p50 %v p99 %v p99.9 %v\n",
				rep.Mask.P50, rep.Mask.P99, rep.Mask.P999, rep.Mask.Max, rep.Mask.CPUP50, rep.Mask.CPUP99, rep.Mask.CPUP999)
			fmt.Fprintf(out, "time to first mask  wall p50 %v p99 %v | cpu p50 %v p99 %v\n", rep.TTFM.P50, rep.TTFM.P99, rep.TTFM.CPUP50, rep.TTFM.CPUP99)
			for _, s := range rep.Slowest {
				fmt.Fprintf(out, "slow mask: %s\n", s)
			}
			for _, r := range rep.RandomOpen {
				fmt.Fprintf(out, "no stop: %s\n", r)
			}
			for _, r := range rep.Refusals {
				fmt.Fprintf(out, "refused %s\n", r)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tokDir, "tokenizer", "", "tokenizer directory (tokenizer.json) or .gguf file")
	cmd.Flags().StringVar(&corpus, "corpus", "pkg/grammar/testdata/schemas", "directory of JSON Schema files")
	cmd.Flags().IntVar(&random, "random", 3, "random generations per schema")
	cmd.Flags().IntVar(&maxTokens, "max_tokens", 1024, "token limit of a random generation")
	cmd.Flags().IntVar(&procs, "procs", 1, "GOMAXPROCS while measuring (one core by default)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().IntVar(&maxString, "max_string", 0, "generation bound on strings without maxLength (0: the default, -1: none)")
	cmd.Flags().IntVar(&maxWS, "max_whitespace", 0, "whitespace bound between JSON tokens (0: the default, -1: none)")
	cmd.Flags().IntVar(&maxItems, "max_items", 0, "generation bound on array items and free-form object members (0: the default, -1: none)")
	cmd.Flags().StringVar(&profile, "cpuprofile", "", "write a Go CPU profile of the measured run (not the tokenizer setup) to this file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&maskbench, "maskbench", "", "run MaskBench's test over this JSON-lines file (scripts/maskbench-prep.py) instead of --corpus")
	return cmd
}

func runMaskBench(cmd *cobra.Command, path string, v *grammar.Vocab, encode func(string) []int32, opts grammar.Options, asJSON bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--maskbench: %w", err)
	}
	defer f.Close()
	rep, err := grammar.MaskBench(f, v, encode, opts)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
	}
	out := cmd.OutOrStdout()
	refusals := make([]string, 0, len(rep.RefusedBy))
	for msg := range rep.RefusedBy {
		refusals = append(refusals, msg)
	}
	sort.Slice(refusals, func(i, j int) bool { return rep.RefusedBy[refusals[i]] > rep.RefusedBy[refusals[j]] })
	for _, msg := range refusals[:min(len(refusals), 15)] {
		fmt.Fprintf(out, "refused %5d: %s\n", rep.RefusedBy[msg], msg)
	}
	for _, id := range rep.InvalidAcceptedIDs {
		fmt.Fprintf(out, "invalid instance accepted: %s\n", id)
	}
	fmt.Fprintf(out, "schemas %d, refused %d, passing %d (%.1f%%), tests %d, valid rejected %d, invalid accepted %d, time to first mask over 15 ms %d\n",
		rep.Schemas, rep.Refused, rep.Passing, 100*float64(rep.Passing)/float64(max(rep.Schemas, 1)), rep.Tests, rep.ValidRejected, rep.InvalidAccepted, len(rep.SlowTTFMs))
	fmt.Fprintf(out, "mask per token  wall p50 %v p99 %v p99.9 %v max %v | cpu p50 %v p99 %v p99.9 %v\n",
		rep.Mask.P50, rep.Mask.P99, rep.Mask.P999, rep.Mask.Max, rep.Mask.CPUP50, rep.Mask.CPUP99, rep.Mask.CPUP999)
	fmt.Fprintf(out, "time to first mask  wall p50 %v p99 %v max %v | cpu p50 %v p99 %v\n", rep.TTFM.P50, rep.TTFM.P99, rep.TTFM.Max, rep.TTFM.CPUP50, rep.TTFM.CPUP99)
	return nil
}
