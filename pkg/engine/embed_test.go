package engine_test

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// directEmbedding pools prompt with pkg/model directly: one Forward per
// chunk of the given size, as the engine's canonical chunks cut it.
func directEmbedding(t *testing.T, m *model.Model, prompt []int32, chunk int, pool engine.Pool, normalize bool) []float32 {
	t.Helper()
	kv := m.NewKV(len(prompt))
	slots := make([]int32, len(prompt))
	for i := range slots {
		slots[i] = int32(i)
	}
	h := make([]float32, m.Config().Hidden)
	for start := 0; start < len(prompt); start += chunk {
		end := min(start+chunk, len(prompt))
		pos := make([]int32, 0, end-start)
		for p := start; p < end; p++ {
			pos = append(pos, int32(p))
		}
		seq := model.Seq{Start: 0, Len: end - start, Slots: slots[:end]}
		switch {
		case pool == engine.PoolMean:
			seq.Hidden, seq.HiddenMode = h, model.HiddenSum
		case pool == engine.PoolCLS && start == 0:
			seq.Hidden, seq.HiddenMode = h, model.HiddenFirst
		case pool == engine.PoolLast && end == len(prompt):
			seq.Hidden, seq.HiddenMode = h, model.HiddenLast
		}
		if err := m.Forward(&model.Batch{Tokens: prompt[start:end], Positions: pos, Seqs: []model.Seq{seq}}, kv, nil); err != nil {
			t.Fatal(err)
		}
	}
	if pool == engine.PoolMean {
		for i := range h {
			h[i] /= float32(len(prompt))
		}
	}
	if normalize {
		var ss float64
		for _, x := range h {
			ss += float64(x) * float64(x)
		}
		for i := range h {
			h[i] = float32(float64(h[i]) / math.Sqrt(ss))
		}
	}
	return h
}

// TestEmbeddingRequests runs embedding requests through the engine next to
// a generating request, for every pooling, whole and in chunks, and
// compares each vector with a direct pkg/model computation. The embedding
// requests sample nothing, leave no KV behind and no prompt-cache entry (a
// later generation of the same prompt finds no cached prefix), and the
// generating request's tokens are those it gets alone.
func TestEmbeddingRequests(t *testing.T) {
	m := loadModel(t, filepath.Join(storiesDir(t), "hf"))
	ref := loadModel(t, filepath.Join(storiesDir(t), "hf"))
	prompt := []int32{1, 403, 407, 261, 378, 324, 261, 350, 412, 414, 283, 294, 300, 270, 263, 262, 281, 301, 369, 275}
	gen := sampler.DefaultParams()
	gen.MaxNewTokens = 12
	alone := runAll(t, func() *engine.Engine {
		e, err := engine.New(m, engine.Options{MaxTotalTokens: 512})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Add(engine.Request{ID: 9, Prompt: []int32{1, 300, 301}, Params: gen}); err != nil {
			t.Fatal(err)
		}
		return e
	}())[9].tokens
	for _, tc := range []struct {
		name      string
		pool      engine.Pool
		normalize bool
		chunk     int
	}{
		{"last, normalised", engine.PoolLast, true, 0},
		{"mean", engine.PoolMean, false, 0},
		{"mean in chunks of 8", engine.PoolMean, true, 8},
		{"cls in chunks of 8", engine.PoolCLS, false, 8},
		{"last in chunks of 8", engine.PoolLast, false, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := engine.New(m, engine.Options{MaxTotalTokens: 512, ChunkedPrefillSize: tc.chunk,
				Embed: engine.EmbedOptions{Pool: tc.pool, Normalize: tc.normalize}})
			if err != nil {
				t.Fatal(err)
			}
			embed := sampler.DefaultParams()
			embed.Embed, embed.MaxNewTokens, embed.MinNewTokens = true, 0, 0
			for _, r := range []engine.Request{{ID: 1, Prompt: prompt, Params: embed}, {ID: 9, Prompt: []int32{1, 300, 301}, Params: gen}} {
				if err := e.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			var vec []float32
			toks := map[uint64][]int32{}
			for e.HasWork() {
				outs, err := e.Step()
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					if o.ID == 1 {
						if !o.Finished || o.Token != -1 || o.Reason != engine.FinishStop || vec != nil {
							t.Fatalf("embedding output %+v", o)
						}
						vec = o.Embedding
						continue
					}
					toks[o.ID] = append(toks[o.ID], o.Token)
				}
			}
			chunk := tc.chunk
			if chunk == 0 {
				chunk = len(prompt)
			}
			want := directEmbedding(t, ref, prompt, chunk, tc.pool, tc.normalize)
			if len(vec) != len(want) {
				t.Fatalf("%d floats, want %d", len(vec), len(want))
			}
			for i := range want {
				if math.Abs(float64(vec[i]-want[i])) > 1e-6 {
					t.Fatalf("float %d: engine %g, direct %g", i, vec[i], want[i])
				}
			}
			if tc.normalize {
				var ss float64
				for _, x := range vec {
					ss += float64(x) * float64(x)
				}
				if math.Abs(ss-1) > 1e-5 {
					t.Errorf("normalised vector has squared norm %g", ss)
				}
			}
			if got := toks[9]; len(got) != len(alone) || !equalTokens(got, alone) {
				t.Errorf("batch mate generated %v, alone %v", got, alone)
			}
			checkIdleKV(t, e)
			if st := e.Stats(); st.KVCached > 3 {
				t.Errorf("%d tokens cached: only the batch mate's 3-token prompt may be", st.KVCached)
			}
			// The same prompt generated now finds nothing cached but BOS.
			if err := e.Add(engine.Request{ID: 2, Prompt: prompt, Params: gen}); err != nil {
				t.Fatal(err)
			}
			var hit int
			for e.HasWork() {
				outs, err := e.Step()
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					hit = max(hit, o.PromptCacheLen)
				}
			}
			if hit > 1 {
				t.Errorf("generation after the embedding found %d cached prompt tokens", hit)
			}
		})
	}
	t.Run("refused without pooling", func(t *testing.T) {
		e, err := engine.New(m, engine.Options{MaxTotalTokens: 64})
		if err != nil {
			t.Fatal(err)
		}
		p := sampler.DefaultParams()
		p.Embed = true
		if err := e.Add(engine.Request{ID: 1, Prompt: prompt, Params: p}); !errors.Is(err, engine.ErrNoEmbeddings) {
			t.Fatalf("Add: %v, want ErrNoEmbeddings", err)
		}
	})
}

func equalTokens(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
