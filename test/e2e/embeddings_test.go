package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// embedPost posts body to /v1/embeddings and returns the status and body.
func embedPost(ctx context.Context, base string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/embeddings", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

type embedAnswer struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors decodes every data entry, float arrays or base64.
func (a embedAnswer) vectors(t *testing.T) [][]float32 {
	t.Helper()
	out := make([][]float32, len(a.Data))
	for i, d := range a.Data {
		if d.Index != i || d.Object != "embedding" {
			t.Fatalf("data[%d]: index %d, object %q", i, d.Index, d.Object)
		}
		var s string
		if json.Unmarshal(d.Embedding, &s) == nil {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw)%4 != 0 {
				t.Fatalf("data[%d]: bad base64 (%v)", i, err)
			}
			for k := 0; k < len(raw); k += 4 {
				out[i] = append(out[i], math.Float32frombits(binary.LittleEndian.Uint32(raw[k:])))
			}
			continue
		}
		if err := json.Unmarshal(d.Embedding, &out[i]); err != nil {
			t.Fatalf("data[%d]: %v", i, err)
		}
	}
	return out
}

// directMean is what the server must compute for --pooling mean on a model
// that says nothing (so normalised): pkg/model's final hidden states,
// summed over the prompt in one prefill, averaged, L2-normalised.
func directMean(t *testing.T, m *model.Model, ids []int32) []float32 {
	t.Helper()
	kv := m.NewKV(len(ids))
	slots, pos := make([]int32, len(ids)), make([]int32, len(ids))
	for i := range ids {
		slots[i], pos[i] = int32(i), int32(i)
	}
	h := make([]float32, m.Config().Hidden)
	b := &model.Batch{Tokens: ids, Positions: pos, Seqs: []model.Seq{{Start: 0, Len: len(ids), Slots: slots, Hidden: h, HiddenMode: model.HiddenSum}}}
	if err := m.Forward(b, kv, nil); err != nil {
		t.Fatal(err)
	}
	var ss float64
	for i := range h {
		h[i] /= float32(len(ids))
		ss += float64(h[i]) * float64(h[i])
	}
	for i := range h {
		h[i] = float32(float64(h[i]) / math.Sqrt(ss))
	}
	return h
}

// TestEmbeddings (issue 22 point 4) runs /v1/embeddings through the six
// processes on stories260K: refused by name without --pooling; with
// --pooling mean every input form gives the vector pkg/model computes in
// process, base64 decodes to the same floats, a repeat is identical, bad
// input is a 400 naming the parameter, and an embedding leaves nothing in
// the prompt cache.
func TestEmbeddings(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	hf := filepath.Join(modelsDir(t), "stories260K", "hf")
	bin := buildBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("not an embedding model", func(t *testing.T) {
		s := launch(t, bin, hf)
		code, body, err := embedPost(ctx, s.base, map[string]any{"input": "hello"})
		if err != nil {
			t.Fatal(err)
		}
		if code != 400 || !strings.Contains(string(body), "not an embedding model") || !strings.Contains(string(body), "--pooling") {
			t.Fatalf("%d %s", code, body)
		}
	})

	s := launch(t, bin, hf, "--pooling", "mean")
	tok, err := tokenizer.Load(hf)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(hf, model.LoadOptions{NoTokenizer: true, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	texts := []string{"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat.", "Tom had a red ball."}
	want := make([][]float32, len(texts))
	ids := make([][]int32, len(texts))
	total := 0
	for i, x := range texts {
		ids[i] = tok.Encode(x, true)
		want[i] = directMean(t, m, ids[i])
		total += len(ids[i])
	}
	check := func(t *testing.T, body any, wantIdx []int, wantTokens int) [][]float32 {
		t.Helper()
		code, raw, err := embedPost(ctx, s.base, body)
		if err != nil || code != 200 {
			t.Fatalf("%d %s (%v)", code, raw, err)
		}
		var a embedAnswer
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		if a.Object != "list" || a.Model == "" || a.Usage.PromptTokens != wantTokens || a.Usage.TotalTokens != wantTokens {
			t.Fatalf("answer %+v, want %d prompt tokens", a, wantTokens)
		}
		got := a.vectors(t)
		if len(got) != len(wantIdx) {
			t.Fatalf("%d vectors, want %d", len(got), len(wantIdx))
		}
		for k, i := range wantIdx {
			if len(got[k]) != m.Config().Hidden {
				t.Fatalf("vector %d has %d floats, hidden size %d", k, len(got[k]), m.Config().Hidden)
			}
			for j := range got[k] {
				if math.Abs(float64(got[k][j]-want[i][j])) > 1e-5 {
					t.Fatalf("vector %d float %d: server %g, pkg/model %g", k, j, got[k][j], want[i][j])
				}
			}
		}
		return got
	}
	var first [][]float32
	t.Run("input forms", func(t *testing.T) {
		first = check(t, map[string]any{"model": "stories", "input": texts}, []int{0, 1, 2}, total)
		check(t, map[string]any{"input": texts[1]}, []int{1}, len(ids[1]))
		check(t, map[string]any{"input": ids[2]}, []int{2}, len(ids[2]))
		check(t, map[string]any{"input": [][]int32{ids[0], ids[2]}, "encoding_format": "base64"}, []int{0, 2}, len(ids[0])+len(ids[2]))
		check(t, map[string]any{"input": texts[0], "dimensions": m.Config().Hidden, "encoding_format": "float"}, []int{0}, len(ids[0]))
	})
	t.Run("a repeat is identical", func(t *testing.T) {
		again := check(t, map[string]any{"input": texts}, []int{0, 1, 2}, total)
		for i := range again {
			for j := range again[i] {
				if again[i][j] != first[i][j] {
					t.Fatalf("vector %d float %d: %g then %g", i, j, first[i][j], again[i][j])
				}
			}
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			body  any
			param string
		}{
			{map[string]any{}, "input"},
			{map[string]any{"input": ""}, "input"},
			{map[string]any{"input": []string{}}, "input"},
			{map[string]any{"input": []any{"a", 3}}, "input"},
			{map[string]any{"input": []int{1, 99999}}, "input"},
			{map[string]any{"input": map[string]any{"x": 1}}, "input"},
			{map[string]any{"input": "x", "encoding_format": "hex"}, "encoding_format"},
			{map[string]any{"input": "x", "dimensions": 7}, "dimensions"},
			{map[string]any{"input": strings.Repeat("Lily ran. ", 400)}, "input"},
		} {
			code, raw, err := embedPost(ctx, s.base, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if code != 400 || json.Unmarshal(raw, &e) != nil || e.Error.Param == nil || *e.Error.Param != tc.param || e.Error.Message == "" {
				t.Errorf("%v: %d %s, want a 400 naming %s", tc.body, code, raw, tc.param)
			}
		}
	})
	t.Run("an infer restart mid-batch changes nothing", func(t *testing.T) {
		// Enough prefill that kill -9 lands while requests run; requests
		// in flight are resumed by the new infer, later ones wait for it.
		var batch []string
		var batchWant [][]float32
		for i := range 96 {
			x := fmt.Sprintf("Story %d. %s %s", i, strings.Repeat(texts[i%3]+" ", 6), texts[(i+1)%3])
			batch = append(batch, x)
			batchWant = append(batchWant, directMean(t, m, tok.Encode(x, true)))
		}
		type result struct {
			code int
			body []byte
			err  error
		}
		done := make(chan result, 1)
		go func() {
			code, body, err := embedPost(ctx, s.base, map[string]any{"input": batch})
			done <- result{code, body, err}
		}()
		time.Sleep(30 * time.Millisecond)
		old := s.kill9("infer")
		s.waitRestarted("infer", old, time.Minute)
		r := <-done
		// For the log: how many requests the kill caught (the new infer
		// resumes them; 0 means the batch outran the kill this time).
		if m := regexp.MustCompile(`"epoch":2,"resumed":(\d+)`).FindStringSubmatch(s.log.String()); m != nil {
			t.Logf("the new infer resumed %s embedding requests", m[1])
		}
		if r.err != nil || r.code != 200 {
			t.Fatalf("%d %s (%v)", r.code, r.body, r.err)
		}
		var a embedAnswer
		if err := json.Unmarshal(r.body, &a); err != nil {
			t.Fatal(err)
		}
		got := a.vectors(t)
		if len(got) != len(batch) {
			t.Fatalf("%d vectors for %d inputs", len(got), len(batch))
		}
		for i := range got {
			for j := range got[i] {
				if math.Abs(float64(got[i][j]-batchWant[i][j])) > 1e-5 {
					t.Fatalf("input %d float %d: %g after the restart, pkg/model %g", i, j, got[i][j], batchWant[i][j])
				}
			}
		}
	})
	t.Run("prompt cache untouched", func(t *testing.T) {
		c, err := benchComplete(ctx, s.base, texts[0], 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Cached > 1 {
			t.Errorf("a completion of an embedded prompt found %d cached tokens: the embedding left KV in the cache", c.Cached)
		}
	})
}
