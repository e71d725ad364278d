package config

import (
	"errors"
	"strings"
	"testing"
)

// --model_dir builtin:tiny-random resolves without any file and without
// asking the Hub: the spec is kept as is for the roles, and the derived
// values come from the builtin table (context 2048, eos 2, f32 weights,
// KV of 2 layers × 2 KV heads × 16 dims × K,V × 4 bytes = 512 B a token).
func TestResolveBuiltin(t *testing.T) {
	t.Setenv(EnvRunDir, t.TempDir())
	opts := testOpts()
	opts.ResolveModel = func(spec string) (string, error) {
		t.Errorf("the Hub was asked for %q", spec)
		return "", errors.New("no hub in this test")
	}
	_, in := parse(t, "--model_dir", "builtin:tiny-random")
	c, err := Resolve(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelDir != "builtin:tiny-random" || c.MaxReqTotalLen != 2048 || len(c.EosID) != 1 || c.EosID[0] != 2 ||
		c.DataType != "fp32" || c.KVBytesPerToken != 256 || c.MaxTotalTokenNum != 256*2048 {
		t.Errorf("resolved model_dir %q req %d eos %v dtype %q bpt %d kv %d", c.ModelDir, c.MaxReqTotalLen, c.EosID,
			c.DataType, c.KVBytesPerToken, c.MaxTotalTokenNum)
	}
	info, err := ReadModelInfo("builtin:tiny-random")
	if err != nil || info.Format != FormatBuiltin || info.Arch != "llama" {
		t.Errorf("ReadModelInfo: %+v, %v", info, err)
	}
}

func TestResolveUnknownBuiltin(t *testing.T) {
	t.Setenv(EnvRunDir, t.TempDir())
	_, in := parse(t, "--model_dir", "builtin:no-such-model")
	_, err := Resolve(in, testOpts())
	if err == nil || !strings.Contains(err.Error(), "builtin:tiny-random") {
		t.Fatalf("err %v, want one listing the builtin models", err)
	}
}
