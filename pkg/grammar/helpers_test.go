package grammar

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

var llama3Vocab = sync.OnceValues(func() (*Vocab, error) {
	dir, err := sharedDir()
	if err != nil {
		return nil, err
	}
	tk, err := tokenizer.LoadDir(filepath.Join(dir, "fixtures", "tokenizers", "llama3"))
	if err != nil {
		return nil, err
	}
	return VocabFromTokenizer(tk), nil
})

// loadLlama3 is the Llama-3 vocabulary (128k tokens) or a skip saying why.
func loadLlama3(t testing.TB) *Vocab {
	t.Helper()
	v, err := llama3Vocab()
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("llama3 tokenizer fixture: %v", err), nil)
	}
	return v
}

func sharedDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
	shared := filepath.Join(dir, "..", "shared")
	if _, err := os.Stat(shared); err != nil {
		return "", err
	}
	return shared, nil
}

// byteVocab has one token per byte value plus the given multi-byte tokens;
// EOS is the last id.
func byteVocab(extra ...string) *Vocab {
	var toks [][]byte
	for b := 0; b < 256; b++ {
		toks = append(toks, []byte{byte(b)})
	}
	for _, e := range extra {
		toks = append(toks, []byte(e))
	}
	toks = append(toks, nil)
	return NewVocab(toks, []int32{int32(len(toks) - 1)})
}

// validator is the options of a grammar used to check instances rather
// than to generate them: no generation bounds on strings and arrays.
func validator(o Options) Options {
	o.MaxStringLength, o.MaxItems = -1, -1
	return o
}

// allTokens is every token's bytes of v, by id.
func allTokens(v *Vocab) [][]byte {
	out := make([][]byte, v.Size())
	for id := range out {
		out[id] = v.TokenBytes(int32(id))
	}
	return out
}
