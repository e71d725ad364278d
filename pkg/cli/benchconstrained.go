package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/lightllm-go/lightllm/pkg/constrain"
	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/grammar"
	"github.com/lightllm-go/lightllm/pkg/model"
)

type constrainedFlags struct {
	constrained, rounds int
	schemas             string
}

// benchConstrained is bench-engine --constrained: the model with its
// tokenizer (the grammar needs it), one constrain.Factory as infer builds
// it, and the corpus' schemas handed to the constrained requests in turn.
func benchConstrained(ctx context.Context, path string, threads int, o engine.BenchOptions, cb constrainedFlags) (map[string]any, error) {
	corpus, err := grammar.LoadBenchCorpus(cb.schemas)
	if err != nil {
		return nil, err
	}
	tok, err := model.LoadTokenizer(path)
	if err != nil {
		return nil, fmt.Errorf("bench-engine --constrained needs the model's tokenizer: %w", err)
	}
	m, err := model.Load(path, model.LoadOptions{Threads: threads, NoTokenizer: true, MmapWeights: o.MmapWeights})
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	defer m.Close()
	cfg := m.Config()
	f := constrain.NewFactory(tok, cfg.EOS)
	var makers []func() (*constrain.Processor, error)
	var refused []string
	for _, s := range corpus {
		mk, err := f.New(constrain.Spec{Grammar: grammar.Spec{Kind: grammar.KindJSONSchema, Text: string(s.Schema)}}, cfg.Vocab)
		if err != nil {
			refused = append(refused, s.Name)
			continue
		}
		makers = append(makers, mk)
	}
	if len(makers) == 0 {
		return nil, fmt.Errorf("bench-engine: no schema of %s compiles (%v)", cb.schemas, refused)
	}
	res, err := engine.BenchConstrained(ctx, m, engine.ConstrainedBench{
		Sequences: slices.Max(o.Sequences), Constrained: cb.constrained, GenTokens: o.GenTokens, Rounds: cb.rounds,
		NewProcessor: func(i int) func() (engine.LogitsProcessor, error) {
			mk := makers[i%len(makers)]
			return func() (engine.LogitsProcessor, error) { return mk() }
		}})
	if err != nil {
		return nil, err
	}
	out := map[string]any{"model": path, "threads": m.Threads(), "schemas": len(makers), "schemas_refused": len(refused)}
	for k, v := range res {
		out[k] = v
	}
	return out, nil
}
