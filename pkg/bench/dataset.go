package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// Tokenizer is what the benchmark needs from a tokenizer: pkg/tokenizer's
// *Tokenizer satisfies it; tests use a small double.
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int32
	Decode(ids []int32, skipSpecial bool) string
	VocabSize() int
	IsSpecial(id int32) bool
}

// Sample is one benchmark request: the prompt text, its length in tokens
// as the local tokenizer counts it, and the number of tokens to generate.
type Sample struct {
	Prompt    string
	PromptLen int
	OutputLen int
	// Schema, when set, makes the request structured output: a
	// json_schema response_format (guided_json on the native API).
	Schema json.RawMessage
}

// WithSchemas makes a share (0..1) of samples structured, spread evenly
// over the run (sample i when floor((i+1)*share) passes floor(i*share)),
// taking the schemas in turn: the structured-output workload.
func WithSchemas(samples []Sample, share float64, schemas []json.RawMessage) error {
	if share < 0 || share > 1 || math.IsNaN(share) {
		return fmt.Errorf("bench: structured share %g: want 0..1", share)
	}
	if share > 0 && len(schemas) == 0 {
		return errors.New("bench: a structured share with no schemas")
	}
	next := 0
	for i := range samples {
		if math.Floor(float64(i+1)*share) > math.Floor(float64(i)*share) {
			samples[i].Schema = schemas[next%len(schemas)]
			next++
		}
	}
	return nil
}

// vLLM's ShareGPT filters (benchmark_serving.py sample_sharegpt_requests).
const (
	sharegptMinLen       = 4
	sharegptMaxPromptLen = 1024
	sharegptMaxTotalLen  = 2048
)

// LoadShareGPT reads a ShareGPT JSON file (a list of {"conversations":
// [{"from": "human", "value": ...}, {"from": "gpt", ...}, ...]}) and samples
// n requests as vLLM does: conversations with at least two turns, first turn
// as prompt and second as reference completion, shuffled with seed; prompts
// under 4 tokens, completions under 4 tokens (unless outputLen > 0 fixes the
// output length), prompts over 1024 or prompt+output over 2048 tokens are
// skipped. It returns fewer than n samples when the file has fewer valid ones.
func LoadShareGPT(path string, tok Tokenizer, n int, seed uint64, outputLen int) ([]Sample, error) {
	if tok == nil {
		return nil, errors.New("sharegpt dataset: a tokenizer is required to measure prompt lengths")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sharegpt dataset: %w", err)
	}
	defer f.Close()
	pairs, err := readShareGPT(f)
	if err != nil {
		return nil, fmt.Errorf("sharegpt dataset %s: %w", path, err)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	var out []Sample
	for _, p := range pairs {
		if len(out) == n {
			break
		}
		promptLen := len(tok.Encode(p[0], true))
		outLen := outputLen
		if outLen <= 0 {
			outLen = len(tok.Encode(p[1], true))
		}
		if promptLen < sharegptMinLen || (outputLen <= 0 && outLen < sharegptMinLen) {
			continue
		}
		if promptLen > sharegptMaxPromptLen || promptLen+outLen > sharegptMaxTotalLen {
			continue
		}
		out = append(out, Sample{Prompt: p[0], PromptLen: promptLen, OutputLen: outLen})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sharegpt dataset %s: no conversation passes the length filters", path)
	}
	return out, nil
}

// readShareGPT streams the top-level array and keeps only the first two
// turns of each conversation (real ShareGPT dumps are hundreds of MB).
func readShareGPT(r io.Reader) ([][2]string, error) {
	dec := json.NewDecoder(r)
	t, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != '[' {
		return nil, errors.New("want a JSON array of conversations")
	}
	var pairs [][2]string
	for i := 0; dec.More(); i++ {
		var entry struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := dec.Decode(&entry); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if len(entry.Conversations) < 2 {
			continue
		}
		pairs = append(pairs, [2]string{entry.Conversations[0].Value, entry.Conversations[1].Value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return pairs, nil
}

// RandomSamples makes n prompts of random real tokens (non-special ids of
// tok's vocabulary), as vLLM's random dataset: input and output lengths are
// drawn uniformly from [L*(1-r), L*(1+r)]; the token ids are decoded to
// text, re-encoded and truncated so that PromptLen is what the text encodes
// to (decode/encode do not round-trip exactly), never more than the drawn
// input length.
func RandomSamples(tok Tokenizer, n, inputLen, outputLen int, rangeRatio float64, seed uint64) ([]Sample, error) {
	if tok == nil {
		return nil, errors.New("random dataset: a tokenizer is required to build prompts of real tokens")
	}
	if inputLen < 1 || outputLen < 1 {
		return nil, fmt.Errorf("random dataset: input and output lengths must be >= 1 (got %d, %d)", inputLen, outputLen)
	}
	if rangeRatio < 0 || rangeRatio >= 1 {
		return nil, fmt.Errorf("random dataset: range ratio must be in [0, 1), got %g", rangeRatio)
	}
	var ids []int32
	for id := range int32(tok.VocabSize()) {
		if !tok.IsSpecial(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("random dataset: the tokenizer has no ordinary tokens")
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	span := func(l int) int {
		lo := max(int(float64(l)*(1-rangeRatio)), 1)
		hi := max(int(float64(l)*(1+rangeRatio)), lo)
		return lo + rng.IntN(hi-lo+1)
	}
	out := make([]Sample, 0, n)
	for range n {
		in, outLen := span(inputLen), span(outputLen)
		seq := make([]int32, in)
		for j := range seq {
			seq[j] = ids[rng.IntN(len(ids))]
		}
		re := tok.Encode(tok.Decode(seq, false), false)
		if len(re) > in {
			re = re[:in]
		}
		prompt := tok.Decode(re, false)
		got := len(tok.Encode(prompt, false))
		// A cut can end inside a multi-token character (a byte-fallback
		// sequence), which decodes to a replacement character that
		// encodes longer: cut further until the text fits.
		for got > in && len(re) > 1 {
			re = re[:max(len(re)-(got-in), 1)]
			prompt = tok.Decode(re, false)
			got = len(tok.Encode(prompt, false))
		}
		out = append(out, Sample{Prompt: prompt, PromptLen: got, OutputLen: outLen})
	}
	return out, nil
}
