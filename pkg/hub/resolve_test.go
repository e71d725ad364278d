package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const storiesRepo = "karpathy/stories260K"

// env returns a Getenv over vars only, so the tests never see the real
// HF_TOKEN, HF_HUB_OFFLINE or ~/.cache.
func env(t testing.TB, vars map[string]string) func(string) string {
	home := t.TempDir()
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		if k == "HOME" {
			return home
		}
		return ""
	}
}

func testOptions(t testing.TB, h *fakeHub, cache string) Options {
	return Options{
		Endpoint:  h.hub.URL,
		CacheDir:  cache,
		Getenv:    env(t, nil),
		RetryWait: time.Millisecond,
	}
}

// newStoriesHub serves stories260K's HF folder as storiesRepo.
func newStoriesHub(t testing.TB) (*fakeHub, map[string][]byte) {
	files := storiesFiles(t)
	h := newFakeHub(t)
	h.addRepo(storiesRepo, &fakeRepo{files: files})
	return h, files
}

// checkModelDir asserts dir holds exactly the wanted files with the right bytes.
func checkModelDir(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: content differs from the Hub's (%d vs %d bytes)", name, len(got), len(data))
		}
	}
}

func TestResolveFreshDownload(t *testing.T) {
	h, files := newStoriesHub(t)
	cache := t.TempDir()
	var progress bytes.Buffer
	opts := testOptions(t, h, cache)
	opts.Progress = NewReporter(&progress, ReporterOptions{Mode: ProgressLines})
	dir, err := Resolve(context.Background(), storiesRepo, opts)
	if err != nil {
		t.Fatal(err)
	}
	commit := h.repos[storiesRepo].commit
	if want := filepath.Join(cache, "models--karpathy--stories260K", "snapshots", commit); dir != want {
		t.Fatalf("path = %s, want %s", dir, want)
	}
	checkModelDir(t, dir, files)
	if n := h.count("cdn", "GET", "/cdn/"+sha256Hex(files["model.safetensors"])); n != 1 {
		t.Errorf("model.safetensors fetched %d times from the CDN, want 1", n)
	}
	if !strings.Contains(progress.String(), "download "+storiesRepo+": done") {
		t.Errorf("no completion line in progress output:\n%s", progress.String())
	}
}

func TestResolveCacheHitUsesNoNetwork(t *testing.T) {
	h, files := newStoriesHub(t)
	cache := t.TempDir()
	opts := testOptions(t, h, cache)
	first, err := Resolve(context.Background(), storiesRepo, opts)
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.requests())
	second, err := Resolve(context.Background(), storiesRepo, opts)
	if err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Fatalf("cache hit path %s, want %s", second, first)
	}
	if extra := h.requests()[before:]; len(extra) != 0 {
		t.Fatalf("cache hit made %d requests: %+v", len(extra), extra)
	}

	// Update (what `pull` does) asks for the commit once and fetches nothing.
	opts.Update = true
	if _, err := Resolve(context.Background(), storiesRepo, opts); err != nil {
		t.Fatal(err)
	}
	extra := h.requests()[before:]
	if len(extra) != 1 || !strings.HasPrefix(extra[0].Path, "/api/models/") {
		t.Fatalf("update of a current cache made requests %+v, want one revision lookup", extra)
	}

	// With the Hub gone the cached copy still resolves.
	h.hub.Close()
	opts.Update = false
	got, err := Resolve(context.Background(), storiesRepo, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkModelDir(t, got, files)
}

func TestResolveResumesAfterCutConnection(t *testing.T) {
	h, files := newStoriesHub(t)
	weights := files["model.safetensors"]
	const cut = 400_000
	blob := func(cache string) string {
		return filepath.Join(cache, "models--karpathy--stories260K", "blobs", sha256Hex(weights))
	}

	t.Run("next run resumes", func(t *testing.T) {
		cache := t.TempDir()
		h.set(func() { h.cutAfter["model.safetensors"] = cut })
		opts := testOptions(t, h, cache)
		opts.Retries = -1 // fail on the first cut
		if _, err := Resolve(context.Background(), storiesRepo, opts); err == nil || !strings.Contains(err.Error(), "run again to resume") {
			t.Fatalf("want a resumable error, got %v", err)
		}
		fi, err := os.Stat(blob(cache) + ".incomplete")
		if err != nil {
			t.Fatalf("partial file not kept: %v", err)
		}
		if fi.Size() == 0 || fi.Size() >= int64(len(weights)) {
			t.Fatalf("partial file has %d bytes, want 0 < n < %d", fi.Size(), len(weights))
		}
		before := len(h.requests())
		dir, err := Resolve(context.Background(), storiesRepo, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkModelDir(t, dir, files)
		var ranges []string
		for _, r := range h.requests()[before:] {
			if r.Server == "cdn" && r.Method == "GET" && r.Range != "" {
				ranges = append(ranges, r.Range)
			}
		}
		if want := []string{"bytes=" + strconv.FormatInt(fi.Size(), 10) + "-"}; strings.Join(ranges, ",") != strings.Join(want, ",") {
			t.Fatalf("resume requested ranges %v, want %v", ranges, want)
		}
		if _, err := os.Stat(blob(cache) + ".incomplete"); !os.IsNotExist(err) {
			t.Fatalf("partial file left behind: %v", err)
		}
	})

	t.Run("stalled transfer", func(t *testing.T) {
		cache := t.TempDir()
		h.set(func() { h.cutAfter["model.safetensors"] = cut })
		h.set(func() { h.hang = true })
		defer h.set(func() { h.hang = false })
		opts := testOptions(t, h, cache)
		opts.Retries = -1
		opts.StallTimeout = 100 * time.Millisecond
		if _, err := Resolve(context.Background(), storiesRepo, opts); err == nil || !strings.Contains(err.Error(), "no data for 100ms") {
			t.Fatalf("want a stall error, got %v", err)
		}
		// The resume streams normally; 100 ms without a byte happens on a
		// busy machine (CI runs the packages in parallel), so only the
		// hanging run gets the short limit.
		opts.StallTimeout = time.Minute
		dir, err := Resolve(context.Background(), storiesRepo, opts)
		if err != nil {
			t.Fatal(err)
		}
		checkModelDir(t, dir, files)
	})

	t.Run("retries within one run", func(t *testing.T) {
		cache := t.TempDir()
		h.set(func() { h.cutAfter["model.safetensors"] = cut })
		dir, err := Resolve(context.Background(), storiesRepo, testOptions(t, h, cache))
		if err != nil {
			t.Fatal(err)
		}
		checkModelDir(t, dir, files)
	})
}

func TestResolveChecksumMismatch(t *testing.T) {
	cases := []struct {
		file string
		kind string
	}{
		{"model.safetensors", "sha256"},       // LFS: X-Linked-Etag is the sha256
		{"config.json", "git-sha1"},           // regular file: ETag is the git blob id
		{"tokenizer_config.json", "git-sha1"}, // weak W/"..." ETag
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			h, files := newStoriesHub(t)
			h.set(func() { h.corrupt[tc.file] = true })
			cache := t.TempDir()
			_, err := Resolve(context.Background(), storiesRepo, testOptions(t, h, cache))
			if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), tc.kind) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("want a %s checksum error naming %s, got %v", tc.kind, tc.file, err)
			}
			blobs := filepath.Join(cache, "models--karpathy--stories260K", "blobs")
			bad := filepath.Join(blobs, etagOf(tc.file, files[tc.file]))
			for _, p := range []string{bad, bad + ".incomplete"} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("bad download kept at %s", p)
				}
			}
			commit := h.repos[storiesRepo].commit
			if _, err := os.Lstat(filepath.Join(cache, "models--karpathy--stories260K", "snapshots", commit, tc.file)); !os.IsNotExist(err) {
				t.Errorf("snapshot links the bad file")
			}
			// Once the Hub serves the right bytes the same cache recovers.
			h.set(func() { delete(h.corrupt, tc.file) })
			dir, err := Resolve(context.Background(), storiesRepo, testOptions(t, h, cache))
			if err != nil {
				t.Fatal(err)
			}
			checkModelDir(t, dir, files)
		})
	}
}

func TestResolveSharded(t *testing.T) {
	files := storiesFiles(t)
	sharded := splitSafetensors(t, files["model.safetensors"])
	for k, v := range files {
		if k != "model.safetensors" {
			sharded[k] = v
		}
	}
	h := newFakeHub(t)
	h.addRepo("org/sharded", &fakeRepo{files: sharded})
	dir, err := Resolve(context.Background(), "org/sharded", testOptions(t, h, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	checkModelDir(t, dir, sharded)
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); !os.IsNotExist(err) {
		t.Fatalf("unexpected model.safetensors in a sharded snapshot")
	}
}

func TestResolveGated(t *testing.T) {
	files := storiesFiles(t)
	cases := []struct {
		name      string
		vars      map[string]string
		tokenFile string
		wantErr   string // "" = success
	}{
		{name: "no token", wantErr: "HTTP 401"},
		{name: "wrong token", vars: map[string]string{"HF_TOKEN": "hf_wrong"}, wantErr: "HTTP 403"},
		{name: "HF_TOKEN", vars: map[string]string{"HF_TOKEN": "hf_good"}},
		{name: "legacy HUGGING_FACE_HUB_TOKEN", vars: map[string]string{"HUGGING_FACE_HUB_TOKEN": "hf_good"}},
		{name: "token file", tokenFile: "hf_good\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHub(t)
			h.addRepo("meta/gated", &fakeRepo{files: files, gated: true, token: "hf_good"})
			vars := map[string]string{}
			for k, v := range tc.vars {
				vars[k] = v
			}
			if tc.tokenFile != "" {
				home := t.TempDir()
				if err := os.WriteFile(filepath.Join(home, "token"), []byte(tc.tokenFile), 0o600); err != nil {
					t.Fatal(err)
				}
				vars["HF_HOME"] = home
			}
			cache := t.TempDir()
			opts := testOptions(t, h, cache)
			opts.Getenv = env(t, vars)
			_, err := Resolve(context.Background(), "meta/gated", opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range h.requests() {
					if r.Server == "hub" && r.Auth != "Bearer hf_good" {
						t.Errorf("hub request %s %s without the token", r.Method, r.Path)
					}
					if r.Server == "cdn" && r.Auth != "" {
						t.Errorf("token leaked to the CDN: %s", r.Path)
					}
				}
				return
			}
			if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "HF_TOKEN") ||
				!strings.Contains(err.Error(), "gated") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("want a gated-model error naming HF_TOKEN and %s, got %v", tc.wantErr, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if _, err := os.Stat(filepath.Join(cache, "models--meta--gated", "snapshots")); !os.IsNotExist(err) {
				t.Errorf("a refused download left a snapshot behind")
			}
		})
	}
}

func TestResolveOffline(t *testing.T) {
	h, files := newStoriesHub(t)
	cache := t.TempDir()
	offline := testOptions(t, h, cache)
	offline.Getenv = env(t, map[string]string{"HF_HUB_OFFLINE": "1"})

	_, err := Resolve(context.Background(), storiesRepo, offline)
	if !errors.Is(err, ErrNotCached) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "lightllm pull "+storiesRepo) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Fatalf("want a one-line not-cached error saying what to do, got %q", err)
	}
	if n := len(h.requests()); n != 0 {
		t.Fatalf("offline mode made %d requests", n)
	}

	online := testOptions(t, h, cache)
	dir, err := Resolve(context.Background(), storiesRepo, online)
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.requests())
	offline.Update = true // offline wins over update
	got, err := Resolve(context.Background(), storiesRepo, offline)
	if err != nil || got != dir {
		t.Fatalf("offline resolve = %s, %v; want %s", got, err, dir)
	}
	checkModelDir(t, got, files)
	if n := len(h.requests()) - before; n != 0 {
		t.Fatalf("offline mode made %d requests", n)
	}

	// A partly cached model is named as such.
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(context.Background(), storiesRepo, offline)
	if !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "partly cached (no model.safetensors)") {
		t.Fatalf("want a partly-cached error, got %v", err)
	}
	// Online again, only the missing link is restored: the blob is still there.
	before = len(h.requests())
	if _, err := Resolve(context.Background(), storiesRepo, online); err != nil {
		t.Fatal(err)
	}
	if n := h.count("cdn", "GET", ""); n != 1 {
		t.Fatalf("the weights were downloaded %d times in all, want 1", n)
	}
}

func TestResolveConcurrentGoroutines(t *testing.T) {
	h, files := newStoriesHub(t)
	h.set(func() { h.throttle = 5 * time.Millisecond }) // keep both pulls in flight together
	cache := t.TempDir()
	const n = 3
	var wg sync.WaitGroup
	paths, errs := make([]string, n), make([]error, n)
	for i := range n {
		wg.Go(func() {
			paths[i], errs[i] = Resolve(context.Background(), storiesRepo, testOptions(t, h, cache))
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
		if paths[i] != paths[0] {
			t.Fatalf("pull %d resolved %s, pull 0 %s", i, paths[i], paths[0])
		}
	}
	checkModelDir(t, paths[0], files)
	if got := h.count("cdn", "GET", "/cdn/"+sha256Hex(files["model.safetensors"])); got != 1 {
		t.Errorf("weights downloaded %d times, want 1 (the others wait on the lock)", got)
	}
	assertNoLeftovers(t, cache)
}

// assertNoLeftovers checks no partial or temporary file remains.
func assertNoLeftovers(t *testing.T, cache string) {
	t.Helper()
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".incomplete") || strings.HasSuffix(p, ".tmp")) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

func TestResolveGGUFAndRevisions(t *testing.T) {
	gguf, err := os.ReadFile(filepath.Join(modelsDir(t), "stories260K", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	h := newFakeHub(t)
	h.addRepo("org/gguf", &fakeRepo{
		files: map[string][]byte{"stories260K-f32.gguf": gguf, "q8/stories260K-q8.gguf": gguf[:1000], "README.md": []byte("hi")},
		tags:  map[string]string{"v1.0": "1111111111111111111111111111111111111111"},
	})
	cache := t.TempDir()
	opts := testOptions(t, h, cache)
	commit := h.repos["org/gguf"].commit
	repoDir := filepath.Join(cache, "models--org--gguf")

	p, err := Resolve(context.Background(), "org/gguf:stories260K-f32.gguf", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, gguf) || p != filepath.Join(repoDir, "snapshots", commit, "stories260K-f32.gguf") {
		t.Fatalf("gguf resolved to %s with wrong content or place", p)
	}

	// A file in a sub-folder links three levels up, as huggingface_hub does.
	p, err = Resolve(context.Background(), "org/gguf:q8/stories260K-q8.gguf", opts)
	if err != nil {
		t.Fatal(err)
	}
	if target, _ := os.Readlink(p); target != "../../../blobs/"+sha256Hex(gguf[:1000]) {
		t.Fatalf("nested link target %q", target)
	}

	// Pinned to a commit: no ref is written for it; a tag gets refs/<tag>.
	if _, err := Resolve(context.Background(), "org/gguf@"+commit+":stories260K-f32.gguf", opts); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(context.Background(), "org/gguf@v1.0:stories260K-f32.gguf", opts); err != nil {
		t.Fatal(err)
	}
	refs, _ := os.ReadDir(filepath.Join(repoDir, "refs"))
	var names []string
	for _, r := range refs {
		names = append(names, r.Name())
	}
	if strings.Join(names, ",") != "main,v1.0" {
		t.Fatalf("refs = %v, want [main v1.0]", names)
	}

	errCases := []struct{ spec, want string }{
		{"org/gguf:missing.gguf", "GGUF files there: q8/stories260K-q8.gguf, stories260K-f32.gguf"},
		{"org/gguf", "pick one as org/gguf:q8/stories260K-q8.gguf"},
		{"org/gguf@nope", "no such revision"},
		{"org/absent", "does not exist or is private/gated"},
	}
	for _, tc := range errCases {
		_, err := Resolve(context.Background(), tc.spec, opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%s) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

func TestResolveRetriesBusyHub(t *testing.T) {
	h, files := newStoriesHub(t)
	h.set(func() { h.fail503 = 2 })
	dir, err := Resolve(context.Background(), storiesRepo, testOptions(t, h, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	checkModelDir(t, dir, files)
}

func TestResolveLocalPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(file, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{Getenv: env(t, nil), Endpoint: "http://127.0.0.1:1"} // any network use would fail
	cases := []struct {
		spec, want, wantErr string
	}{
		{spec: dir, want: dir},
		{spec: file, want: file},
		{spec: "builtin:tiny-random", want: "builtin:tiny-random"},
		{spec: filepath.Join(dir, "missing"), wantErr: "does not exist"},
		{spec: "./missing-model", wantErr: "does not exist"},
		{spec: "", wantErr: "no model given"},
		{spec: "just-a-name", wantErr: "org/name"},
	}
	for _, tc := range cases {
		got, err := Resolve(context.Background(), tc.spec, opts)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Resolve(%q) = %q, %v; want error with %q", tc.spec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.spec, got, err, tc.want)
		}
	}
}
