package apiserver_test

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

type embedResp struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	} `json:"data"`
	Usage map[string]int `json:"usage"`
}

// TestEmbeddingsEndpoint: every input form becomes one embedding request
// per input (Embed, no tokens to generate), answered in order in OpenAI's
// shape, as floats or base64 of the same float32 values; bad input and a
// server that embeds nothing are 400s naming the reason.
func TestEmbeddingsEndpoint(t *testing.T) {
	const dim = 8
	ts := startServer(t, apiserver.Options{ModelName: "m", Embeddings: apiserver.EmbeddingOptions{Dim: dim}},
		fakebackend.Options{EmbedDim: dim})
	ids := ts.tok.Encode("Hello world", true)

	r := ts.post(t, "/v1/embeddings", `{"model":"m","input":["Hello world","Once upon a time"]}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	a := decode[embedResp](t, r.body)
	if a.Object != "list" || a.Model != "m" || len(a.Data) != 2 || a.Data[1].Index != 1 || a.Data[0].Object != "embedding" {
		t.Fatalf("%s", r.body)
	}
	floats := func(v any) []float32 {
		var out []float32
		for _, x := range v.([]any) {
			out = append(out, float32(x.(float64)))
		}
		return out
	}
	first := floats(a.Data[0].Embedding)
	if len(first) != dim {
		t.Fatalf("%d floats", len(first))
	}
	want := len(ids) + len(ts.tok.Encode("Once upon a time", true))
	if a.Usage["prompt_tokens"] != want || a.Usage["total_tokens"] != want {
		t.Fatalf("usage %v, want %d", a.Usage, want)
	}
	for _, g := range ts.be.Submitted() {
		if !g.Params.Embed || g.Params.MaxNewTokens != 0 || g.N != 1 {
			t.Fatalf("submitted %+v", g)
		}
	}

	// The same prompt as token ids, base64: the same float32 bits.
	ids64 := make([]string, len(ids))
	for i, id := range ids {
		ids64[i] = itoa(int(id))
	}
	r = ts.post(t, "/v1/embeddings", `{"input":[[`+strings.Join(ids64, ",")+`]],"encoding_format":"base64","dimensions":8}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	b64 := decode[embedResp](t, r.body).Data[0].Embedding.(string)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 4*dim {
		t.Fatalf("base64 %q: %v", b64, err)
	}
	for i := range dim {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != first[i] {
			t.Fatalf("float %d: base64 %g, float %g", i, got, first[i])
		}
	}

	for _, tc := range []struct {
		name, body, param, code string
	}{
		{"no input", `{"model":"m"}`, "input", "missing_required_parameter"},
		{"empty string", `{"input":""}`, "input", "invalid_value"},
		{"empty array", `{"input":[]}`, "input", "invalid_value"},
		{"empty id array", `{"input":[[]]}`, "input[0]", "invalid_value"},
		{"mixed kinds", `{"input":["a",[1]]}`, "input", "invalid_type"},
		{"object", `{"input":{"a":1}}`, "input", "invalid_type"},
		{"bools", `{"input":[true]}`, "input", "invalid_type"},
		{"id out of vocab", `{"input":[1,100000]}`, "input", ""},
		{"encoding", `{"input":"a","encoding_format":"int8"}`, "encoding_format", "invalid_value"},
		{"dimensions", `{"input":"a","dimensions":4}`, "dimensions", "unsupported_parameter"},
		{"too long", `{"input":"` + strings.Repeat("Once upon a time ", 2000) + `"}`, "input", "context_length_exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post(t, "/v1/embeddings", tc.body)
			e := decode[errResp](t, r.body)
			if r.status != 400 || e.Error.Param == nil || *e.Error.Param != tc.param || (tc.code != "" && (e.Error.Code == nil || *e.Error.Code != tc.code)) {
				t.Fatalf("%d %s, want 400 param %s code %s", r.status, r.body, tc.param, tc.code)
			}
		})
	}

	t.Run("a server that embeds nothing says why", func(t *testing.T) {
		off := startServer(t, apiserver.Options{Embeddings: apiserver.EmbeddingOptions{Unavailable: "this model is not an embedding model (x)"}},
			fakebackend.Options{})
		r := off.post(t, "/v1/embeddings", `{"input":"a"}`)
		if e := decode[errResp](t, r.body); r.status != 400 || !strings.Contains(e.Error.Message, "not an embedding model") {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if len(off.be.Submitted()) != 0 {
			t.Fatal("a request was submitted")
		}
	})
}
