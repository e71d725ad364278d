package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/bench"
	"github.com/lightllm-go/lightllm/pkg/grammar"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// goodputArg matches the extra "tpot:MS" words that follow --goodput, as in
// vLLM's `--goodput ttft:500 tpot:50`.
var goodputArg = regexp.MustCompile(`^(?i)(ttft|tpot|e2el):[0-9.eE+-]+$`)

func newBenchCmd() *cobra.Command {
	var (
		cfg                  bench.Config
		api, rate, dataset   string
		tokDir, jsonOut, svg string
		profile              string
		numPrompts           int
		inputLen, outputLen  int
		turnInputLen         int
		rangeRatio           float64
		structured           float64
		schemaDir            string
		goodput              []string
		seed                 int64
	)
	cmd := &cobra.Command{
		Use:   "bench --url http://HOST:PORT [flags]",
		Short: "Benchmark a serving endpoint (OpenAI-compatible or LightLLM native) like vLLM's bench serve",
		Long: "Sends streaming requests from a ShareGPT file or random prompts at a request rate (gamma arrivals,\n" +
			"burstiness 1 = Poisson) or at a fixed concurrency, and reports throughput, TTFT, TPOT, ITL, end-to-end\n" +
			"latency and goodput. Works against lightllm, vLLM, SGLang and llama.cpp's server alike.\n" +
			"A run whose longest prompt + output exceeds the server's max_model_len (GET /v1/models) is refused\n" +
			"before anything is sent; a run mostly served from the server's prompt cache (a repeat with the same\n" +
			"--seed) ends with a warning. Ctrl-C stops sending and prints the partial report.",
		Example: "  lightllm bench --url http://127.0.0.1:8000 --api openai-completions --dataset random \\\n" +
			"      --tokenizer ./model --num-prompts 200 --request-rate 4 --input-len 512 --output-len 128 \\\n" +
			"      --goodput ttft:500 tpot:50 --json out.json --plot out.svg",
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if len(goodput) == 0 || !goodputArg.MatchString(a) {
					return fmt.Errorf("unexpected argument %q", a)
				}
				goodput = append(goodput, a)
			}
			cfg.API = bench.API(api)
			r, err := parseRate(rate)
			if err != nil {
				return err
			}
			cfg.RequestRate = r
			if cfg.SLO, err = bench.ParseGoodput(goodput); err != nil {
				return err
			}
			if numPrompts < 1 {
				return fmt.Errorf("--num-prompts must be >= 1, got %d", numPrompts)
			}
			cfg.Seed = uint64(seed)
			if err := cfg.Validate(); err != nil {
				return err
			}
			if svg != "" && !strings.HasSuffix(strings.ToLower(svg), ".svg") {
				return fmt.Errorf("--plot %s: the file name must end in .svg", svg)
			}
			if tokDir != "" {
				tk, err := tokenizer.Load(tokDir)
				if err != nil {
					return fmt.Errorf("--tokenizer: %w", err)
				}
				cfg.Tokenizer = tk
			}
			var samples []bench.Sample
			turns, multi, err := bench.ParseMultiTurn(dataset)
			if err != nil {
				return err
			}
			switch {
			case multi:
				// Checked below: runs conversations instead of samples.
			case dataset == "random":
				samples, err = bench.RandomSamples(cfg.Tokenizer, numPrompts, inputLen, outputLen, rangeRatio, cfg.Seed)
			case strings.HasPrefix(dataset, "sharegpt:"):
				fixed := 0
				if cmd.Flags().Changed("output-len") {
					fixed = outputLen
				}
				samples, err = bench.LoadShareGPT(strings.TrimPrefix(dataset, "sharegpt:"), cfg.Tokenizer, numPrompts, cfg.Seed, fixed)
			default:
				err = fmt.Errorf("--dataset %q: want random, sharegpt:FILE.json or multiturn[:TURNS]", dataset)
			}
			if err != nil {
				return err
			}
			if !multi && len(samples) < numPrompts {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: the dataset yields %d valid prompts, fewer than --num-prompts %d\n", len(samples), numPrompts)
			}
			if structured > 0 {
				if multi {
					return errors.New("--structured-share: not with the multiturn dataset")
				}
				corpus, err := grammar.LoadBenchCorpus(schemaDir)
				if err != nil {
					return fmt.Errorf("--schemas: %w", err)
				}
				schemas := make([]json.RawMessage, len(corpus))
				for i, c := range corpus {
					schemas[i] = c.Schema
				}
				if err := bench.WithSchemas(samples, structured, schemas); err != nil {
					return err
				}
			}
			cfg.DatasetID = dataset
			if bench.IsTerminal(os.Stderr) {
				cfg.Progress = os.Stderr
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// After the dataset: the profile shows the client's own cost
			// while it sends and reads (scripts/bench-serving.sh).
			stopProfile, err := startCPUProfile(profile)
			if err != nil {
				return err
			}
			defer stopProfile()
			var rep *bench.Report
			if multi {
				if turnInputLen == 0 {
					turnInputLen = inputLen
				}
				convs, cerr := bench.MultiTurnConversations(cfg.Tokenizer, numPrompts, turns, inputLen, turnInputLen, outputLen, cfg.Seed)
				if cerr != nil {
					return cerr
				}
				rep, err = bench.RunMultiTurn(ctx, cfg, convs)
			} else {
				rep, err = bench.Run(ctx, cfg, samples)
			}
			if err != nil {
				return err
			}
			if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
				return err
			}
			if jsonOut != "" {
				if err := rep.WriteJSON(jsonOut); err != nil {
					return err
				}
			}
			if svg != "" {
				if err := rep.WritePlot(svg); err != nil {
					return err
				}
			}
			if rep.Interrupted {
				return errors.New("benchmark interrupted: the report above is partial")
			}
			// CI must see a run whose requests mostly failed.
			if m := rep.Metrics; m.Failed > 0 && m.Failed*2 >= m.Failed+m.Completed {
				return fmt.Errorf("%d of %d requests failed (see the errors above)", m.Failed, m.Failed+m.Completed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.URL, "url", "", "server base URL, e.g. http://127.0.0.1:8000 (required)")
	f.StringVar(&api, "api", string(bench.APICompletions), "wire format: openai-completions, openai-chat or lightllm")
	f.StringVar(&cfg.Model, "model", "", "model name sent to OpenAI endpoints (default: first of GET /v1/models)")
	f.StringVar(&dataset, "dataset", "random", "random, sharegpt:FILE.json, or multiturn[:TURNS] (conversations whose\n"+
		"turn k+1 prompt is turn k's prompt + answer + new user text; default 2 turns)")
	f.IntVar(&numPrompts, "num-prompts", 1000, "number of requests (multiturn: of conversations)")
	f.StringVar(&rate, "request-rate", "inf", "requests per second, or inf to send all at once")
	f.Float64Var(&cfg.Burstiness, "burstiness", 1.0, "gamma shape of arrival gaps: 1 = Poisson, <1 burstier, >1 steadier")
	f.IntVar(&cfg.MaxConcurrency, "max-concurrency", 0, "most requests (multiturn: conversations) in flight at once (0: unlimited)")
	f.IntVar(&inputLen, "input-len", 1024, "random dataset: prompt tokens (multiturn: of the first user message)")
	f.IntVar(&turnInputLen, "turn-input-len", 0, "multiturn dataset: tokens of each later user message (0: --input-len)")
	f.IntVar(&outputLen, "output-len", 128, "output tokens (random and multiturn datasets; for sharegpt only when given)")
	f.Float64Var(&rangeRatio, "range-ratio", 0, "random dataset: lengths drawn from [L*(1-r), L*(1+r)]")
	f.BoolVar(&cfg.IgnoreEOS, "ignore-eos", false, "ask the server to ignore EOS (vLLM/SGLang/LightLLM extension)")
	f.Int64Var(&seed, "seed", 0, "seed for sampling prompts and arrival times")
	f.StringVar(&tokDir, "tokenizer", "", "tokenizer directory (tokenizer.json) or .gguf file: needed for datasets")
	f.StringSliceVar(&goodput, "goodput", nil, "SLOs in ms for goodput: ttft:MS tpot:MS e2el:MS")
	f.StringVar(&jsonOut, "json", "", "write the full report as JSON to this file")
	f.Float64Var(&structured, "structured-share", 0, "share of requests (0..1, spread evenly) asking for json_schema output, schemas of --schemas in turn")
	f.StringVar(&schemaDir, "schemas", "pkg/grammar/testdata/schemas", "with --structured-share: directory of JSON Schema files")
	f.StringVar(&svg, "plot", "", "write TTFT/TPOT CDFs and throughput over time to this .svg file")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the client's run (after the dataset is built) to this file")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", 6*time.Hour, "give up on a single request after this long")
	return cmd
}

func parseRate(s string) (float64, error) {
	if strings.EqualFold(s, "inf") {
		return math.Inf(1), nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || !(r > 0) {
		return 0, fmt.Errorf("--request-rate %q: want a positive number or inf", s)
	}
	return r, nil
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
