package hub

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in      string
		want    Spec
		wantErr string
	}{
		{in: "Qwen/Qwen2.5-0.5B-Instruct", want: Spec{Repo: "Qwen/Qwen2.5-0.5B-Instruct", Revision: "main"}},
		{in: "org/name@v1.0", want: Spec{Repo: "org/name", Revision: "v1.0"}},
		{in: "org/name@refs/pr/1", want: Spec{Repo: "org/name", Revision: "refs/pr/1"}},
		{in: "org/name:model-q8_0.gguf", want: Spec{Repo: "org/name", Revision: "main", File: "model-q8_0.gguf"}},
		{in: "org/name@abc:sub/m.GGUF", want: Spec{Repo: "org/name", Revision: "abc", File: "sub/m.GGUF"}},
		{in: "name-only", wantErr: "org/name"},
		{in: "a/b/c", wantErr: "org/name"},
		{in: "org/na--me", wantErr: "invalid repository name"},
		{in: "org/..", wantErr: "invalid repository name"},
		{in: "org/-x", wantErr: "invalid repository name"},
		{in: "org/name.git", wantErr: ".git"},
		{in: "org/name:model.bin", wantErr: "not a .gguf"},
		{in: "org/name:../x.gguf", wantErr: "invalid file name"},
		{in: "org/name:/x.gguf", wantErr: "invalid file name"},
		{in: "org/name@", wantErr: "empty revision"},
		{in: "org/name@../../x", wantErr: "invalid revision"},
		{in: "org/name@a//b", wantErr: "invalid revision"},
	}
	for _, tc := range cases {
		got, err := ParseSpec(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSpec(%q) = %+v, %v; want error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := ParseSpec(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q via %q = %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestNormalizeETag(t *testing.T) {
	// The cases of huggingface_hub's TestNormalizeEtag.
	cases := map[string]string{
		`"a16a55fda99d2f2e7b69cce5cf93ff4ad3049930"`:                           "a16a55fda99d2f2e7b69cce5cf93ff4ad3049930",
		`W/"a16a55fda99d2f2e7b69cce5cf93ff4ad3049930"`:                         "a16a55fda99d2f2e7b69cce5cf93ff4ad3049930",
		`"7c5d3f4b8b76583b422fcb9189ad6c89d5d97a094541ce8932dce3ecabde1421"`:   "7c5d3f4b8b76583b422fcb9189ad6c89d5d97a094541ce8932dce3ecabde1421",
		`W/"7c5d3f4b8b76583b422fcb9189ad6c89d5d97a094541ce8932dce3ecabde1421"`: "7c5d3f4b8b76583b422fcb9189ad6c89d5d97a094541ce8932dce3ecabde1421",
		"plain": "plain",
	}
	for in, want := range cases {
		if got := normalizeETag(in); got != want {
			t.Errorf("normalizeETag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCacheDirAndTokenFromEnv(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"HF_HUB_CACHE wins", map[string]string{"HF_HUB_CACHE": "/c", "HUGGINGFACE_HUB_CACHE": "/l", "HF_HOME": "/h"}, "/c"},
		{"legacy HUGGINGFACE_HUB_CACHE", map[string]string{"HUGGINGFACE_HUB_CACHE": "/l", "HF_HOME": "/h"}, "/l"},
		{"HF_HOME", map[string]string{"HF_HOME": "/h"}, "/h/hub"},
		{"XDG_CACHE_HOME", map[string]string{"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"},
		{"home", map[string]string{"HOME": "/home/u"}, "/home/u/.cache/huggingface/hub"},
		{"tilde", map[string]string{"HOME": "/home/u", "HF_HOME": "~/hf"}, "/home/u/hf/hub"},
	}
	for _, tc := range cases {
		get := func(k string) string { return tc.vars[k] }
		if got := CacheDirFromEnv(get); got != filepath.FromSlash(tc.want) {
			t.Errorf("%s: CacheDirFromEnv = %s, want %s", tc.name, got, tc.want)
		}
	}
	s := Options{Getenv: func(k string) string {
		return map[string]string{"HF_TOKEN": " hf_x\r\n", "HF_ENDPOINT": "https://mirror.example/", "HF_HUB_OFFLINE": "yes", "HOME": t.TempDir()}[k]
	}}.resolve()
	if s.token != "hf_x" || s.endpoint != "https://mirror.example" || !s.offline {
		t.Fatalf("settings from env: token %q endpoint %q offline %v", s.token, s.endpoint, s.offline)
	}
}
