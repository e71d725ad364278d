package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// genTokenizerModel writes a random-weight model that carries a real
// tokenizer and its chat template (gen-model --tokenizer), untied so that
// sampling at temperature 1 spreads over the whole vocabulary.
func genTokenizerModel(t *testing.T, bin, tokenizer string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), tokenizer)
	src := filepath.Join(modelsDir(t), "..", "fixtures", "tokenizers", tokenizer)
	args := []string{"gen-model", "--tokenizer", src, "--hf_out", dir, "--hidden", "64", "--heads", "4",
		"--ffn", "128", "--layers", "1", "--dtype", "f16", "--seed", "3"}
	if out, err := exec.Command(filepath.Join(bin, "lightllm"), args...).CombinedOutput(); err != nil {
		t.Fatalf("lightllm %v: %v\n%s", args, err, out)
	}
	return dir
}

// corpusSchemas are the grammar engine's realistic schemas
// (pkg/grammar/testdata/schemas), by name.
func corpusSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "pkg", "grammar", "testdata", "schemas", "*.json"))
	if err != nil || len(files) < 20 {
		t.Fatalf("schema corpus: %d files, %v", len(files), err)
	}
	out := map[string]json.RawMessage{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	return out
}

func compileSchema(t *testing.T, name string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// validates parses text as JSON and checks it against s.
func validates(s *jsonschema.Schema, text string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}

type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func postChat(base string, body map[string]any) (chatAnswer, error) {
	var a chatAnswer
	if err := postJSON(base+"/v1/chat/completions", body, &a); err != nil {
		return a, err
	}
	if len(a.Choices) != 1 {
		return a, fmt.Errorf("%d choices, want 1", len(a.Choices))
	}
	return a, nil
}

// parallel runs fn(i) for i < n, at most width at a time.
func parallel(n, width int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// TestStructuredOutput: a random-weight model with the Llama-3 tokenizer
// (128k tokens) sampled at temperature 1 answers every schema of the
// corpus with JSON that validates whenever it stops by itself, and calls
// tools with arguments that validate; the official OpenAI Node client gets
// the same. The grammar does all the work: the model knows nothing.
func TestStructuredOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	bin := buildBinaries(t)
	model := genTokenizerModel(t, bin, "llama3")
	s := launch(t, bin, model, "--running_max_req_size", "16")
	schemas := corpusSchemas(t)
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)

	t.Run("response_format", func(t *testing.T) {
		type result struct {
			finish string
			tokens int
			err    error
		}
		const seeds = 3 // runs per schema, so the stop rate means something
		res := make([]result, seeds*len(names))
		parallel(len(res), 16, func(i int) {
			name := names[i%len(names)]
			a, err := postChat(s.base, map[string]any{"model": "m", "temperature": 1, "seed": i, "max_tokens": 1024,
				"messages":        []map[string]any{{"role": "user", "content": "Answer in JSON."}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "strict": true, "schema": schemas[name]}}})
			if err != nil {
				res[i].err = err
				return
			}
			c := a.Choices[0]
			res[i] = result{finish: c.FinishReason, tokens: a.Usage.CompletionTokens}
			if c.FinishReason == "stop" {
				if err := validates(compileSchema(t, name, schemas[name]), *c.Message.Content); err != nil {
					res[i].err = fmt.Errorf("stopped with an invalid answer %q: %w", *c.Message.Content, err)
				}
			}
		})
		stops := 0
		for i, r := range res {
			name := names[i%len(names)]
			if r.err != nil {
				t.Errorf("%s: %v", name, r.err)
			}
			if r.finish == "stop" {
				stops++
			}
			t.Logf("%-28s seed %2d %-6s %4d tokens", name, i, r.finish, r.tokens)
		}
		// Issue #18: >= 95% stop within 1024 tokens. The grammar's
		// generation bounds (strings, arrays, whitespace: pkg/grammar
		// Options) are what make a random model close its strings.
		rate := float64(stops) / float64(len(res))
		t.Logf("%d/%d stopped within 1024 tokens (%.1f%%)", stops, len(res), 100*rate)
		if rate < 0.95 {
			t.Errorf("%.1f%% of the answers ended with stop, want >= 95%%", 100*rate)
		}
	})

	t.Run("tools", func(t *testing.T) {
		var tools []map[string]any
		params := map[string]*jsonschema.Schema{}
		for _, n := range names {
			if strings.HasPrefix(n, "tool_") {
				fn := strings.TrimPrefix(n, "tool_")
				tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": fn, "parameters": schemas[n]}})
				params[fn] = compileSchema(t, n, schemas[n])
			}
		}
		if len(tools) < 4 {
			t.Fatalf("%d tool schemas in the corpus", len(tools))
		}
		choices := []any{"required"}
		for _, tl := range tools {
			choices = append(choices, map[string]any{"type": "function", "function": map[string]any{"name": tl["function"].(map[string]any)["name"]}})
		}
		errs := make([]error, len(choices))
		parallel(len(choices), 16, func(i int) {
			a, err := postChat(s.base, map[string]any{"model": "m", "temperature": 1, "seed": 100 + i, "max_tokens": 1024,
				"messages": []map[string]any{{"role": "user", "content": "Use a tool."}}, "tools": tools, "tool_choice": choices[i]})
			if err != nil {
				errs[i] = err
				return
			}
			c := a.Choices[0]
			if c.FinishReason == "length" {
				return // cut short: nothing to validate
			}
			if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
				errs[i] = fmt.Errorf("finish %q, calls %+v", c.FinishReason, c.Message.ToolCalls)
				return
			}
			call := c.Message.ToolCalls[0]
			if m, ok := choices[i].(map[string]any); ok && call.Function.Name != m["function"].(map[string]any)["name"] {
				errs[i] = fmt.Errorf("named choice %v called %s", m, call.Function.Name)
				return
			}
			sch, ok := params[call.Function.Name]
			if !ok {
				errs[i] = fmt.Errorf("called unknown function %q", call.Function.Name)
				return
			}
			if err := validates(sch, call.Function.Arguments); err != nil {
				errs[i] = fmt.Errorf("%s arguments %s: %w", call.Function.Name, call.Function.Arguments, err)
			}
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("tool_choice %v: %v", choices[i], err)
			}
		}
	})

	// A model that keeps opening nests a recursive grammar to its depth
	// bound (pkg/grammar/depth.go); there the mask must still leave a way
	// to finish. Before the bound's fit checks, 26-29 of 32 such requests
	// ended in a 500 ("the grammar allows no token here").
	t.Run("recursion to the depth bound", func(t *testing.T) {
		const gbnf = `root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= list | "x" | "(" pair ")"
pair ::= item ":" item`
		errs := make([]error, 16)
		parallel(len(errs), 16, func(i int) {
			a, err := postChat(s.base, map[string]any{"model": "m", "temperature": 1, "seed": 2000 + i, "max_tokens": 400,
				"messages": []map[string]any{{"role": "user", "content": "Nest."}}, "guided_grammar": gbnf})
			switch {
			case err != nil:
				errs[i] = err
			case a.Choices[0].FinishReason != "stop" && a.Choices[0].FinishReason != "length":
				errs[i] = fmt.Errorf("finish reason %q", a.Choices[0].FinishReason)
			}
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("seed %d: %v", 2000+i, err)
			}
		}
	})

	t.Run("openai node client", func(t *testing.T) {
		runOpenAIClientCheck(t, s.base, "--require-chat", "--structured")
	})

	// Last: it restarts infer.
	t.Run("kill -9 infer", func(t *testing.T) { testConstrainedRestart(t, s, schemas, names) })
}

// testConstrainedRestart (issue #18): 16 constrained streams at temperature
// 1 give exactly the fault-free texts when infer is killed -9 while they run
// (the new infer rebuilds each grammar from the slot's extras and replays
// the accepted tokens through it).
func testConstrainedRestart(t *testing.T, s *server, schemas map[string]json.RawMessage, names []string) {
	const streams = 16
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	body := func(i int) map[string]any {
		name := names[i%len(names)]
		return map[string]any{"prompt": "Answer in JSON:", "temperature": 1, "seed": 1000 + i, "max_tokens": 400,
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": schemas[name]}}}
	}
	type out struct {
		text, reason string
		err          error
	}
	run := func(onChunk func(i, n int)) []out {
		res := make([]out, streams)
		parallel(streams, streams, func(i int) {
			res[i].text, res[i].reason, res[i].err = openAIStream(ctx, s.base, "", body(i), func(n int) {
				if onChunk != nil {
					onChunk(i, n)
				}
			})
		})
		return res
	}
	ref := run(nil)
	var once sync.Once
	var running atomic.Int32 // streams that have started and not ended
	var atKill int32
	old := 0
	started := make([]atomic.Bool, streams)
	got := run(func(i, n int) {
		if !started[i].Swap(true) {
			running.Add(1)
		}
		if n == 8 {
			once.Do(func() {
				atKill = running.Load()
				old = s.kill9(config.RoleInfer)
			})
		}
	})
	if old == 0 {
		t.Fatal("every stream ended before the kill")
	}
	t.Logf("infer killed with %d of %d streams under way", atKill, streams)
	for i := range got {
		name := names[i%len(names)]
		if ref[i].err != nil || got[i].err != nil {
			t.Errorf("%s: fault-free %v, with the kill %v", name, ref[i].err, got[i].err)
			continue
		}
		if got[i] != ref[i] {
			t.Errorf("%s: after kill -9 infer %s %s, fault-free %s %s", name, got[i].reason, describe(got[i].text), ref[i].reason, describe(ref[i].text))
		}
	}
	s.waitRestarted(config.RoleInfer, old, 15*time.Second)
}
