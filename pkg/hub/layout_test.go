package hub

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// pyTryToLoadFromCache is huggingface_hub's try_to_load_from_cache
// (file_download.py), transcribed line by line: it is how transformers finds
// cached files, so a cache we write must satisfy it. It returns the path, or
// "<no_exist>" when the file's absence is cached, or "" when not cached.
func pyTryToLoadFromCache(cacheDir, repoID, filename, revision string) string {
	repoCache := filepath.Join(cacheDir, "models--"+strings.ReplaceAll(repoID, "/", "--"))
	if fi, err := os.Stat(repoCache); err != nil || !fi.IsDir() {
		return ""
	}
	refsDir := filepath.Join(repoCache, "refs")
	snapshotsDir := filepath.Join(repoCache, "snapshots")
	noExistDir := filepath.Join(repoCache, ".no_exist")
	if fi, err := os.Stat(refsDir); err == nil && fi.IsDir() {
		revisionFile := filepath.Join(refsDir, revision)
		if fi, err := os.Stat(revisionFile); err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(revisionFile)
			revision = string(b) // Python's f.read(): no strip, so no newline may be written
		}
	}
	if fi, err := os.Stat(filepath.Join(noExistDir, revision, filename)); err == nil && fi.Mode().IsRegular() {
		return "<no_exist>"
	}
	shas, err := os.ReadDir(snapshotsDir)
	if err != nil {
		return ""
	}
	found := false
	for _, s := range shas {
		found = found || s.Name() == revision
	}
	if !found {
		return ""
	}
	cached := filepath.Join(snapshotsDir, revision, filename)
	if fi, err := os.Stat(cached); err == nil && fi.Mode().IsRegular() {
		return cached
	}
	return ""
}

// TestCacheLayoutMatchesHuggingFaceHub checks the documented layout:
// refs/main → snapshots/<commit>/<file> → ../../blobs/<etag>.
func TestCacheLayoutMatchesHuggingFaceHub(t *testing.T) {
	h, files := newStoriesHub(t)
	cache := t.TempDir()
	if _, err := Resolve(context.Background(), storiesRepo, testOptions(t, h, cache)); err != nil {
		t.Fatal(err)
	}
	commit := h.repos[storiesRepo].commit
	repoDir := filepath.Join(cache, "models--karpathy--stories260K")

	ref, err := os.ReadFile(filepath.Join(repoDir, "refs", "main"))
	if err != nil || string(ref) != commit {
		t.Fatalf("refs/main = %q, %v; want exactly %q (no newline)", ref, err, commit)
	}
	var wantBlobs []string
	for name, data := range files {
		etag := etagOf(name, data)
		wantBlobs = append(wantBlobs, etag)
		ptr := filepath.Join(repoDir, "snapshots", commit, name)
		target, err := os.Readlink(ptr)
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", name, err)
		}
		if target != "../../blobs/"+etag {
			t.Errorf("%s -> %s, want ../../blobs/%s", name, target, etag)
		}
		if got := pyTryToLoadFromCache(cache, storiesRepo, name, "main"); got != ptr {
			t.Errorf("try_to_load_from_cache(%s) = %q, want %s", name, got, ptr)
		}
	}
	// stories260K has no special_tokens_map.json: the absence is cached.
	if got := pyTryToLoadFromCache(cache, storiesRepo, "special_tokens_map.json", "main"); got != "<no_exist>" {
		t.Errorf("try_to_load_from_cache(special_tokens_map.json) = %q, want <no_exist>", got)
	}
	blobs, _ := os.ReadDir(filepath.Join(repoDir, "blobs"))
	var gotBlobs []string
	for _, b := range blobs {
		gotBlobs = append(gotBlobs, b.Name())
	}
	sort.Strings(wantBlobs)
	if strings.Join(gotBlobs, " ") != strings.Join(wantBlobs, " ") {
		t.Errorf("blobs = %v, want %v", gotBlobs, wantBlobs)
	}
	for _, p := range []string{
		filepath.Join(cache, ".locks", "models--karpathy--stories260K", sha256Hex(files["model.safetensors"])+".lock"),
		filepath.Join(cache, "CACHEDIR.TAG"),
	} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("missing %s: %v", p, err)
		}
	}
	assertNoLeftovers(t, cache)
}

// TestResolveReusesPythonCache builds a cache the way huggingface_hub
// writes it and checks Resolve uses it offline and with no request.
func TestResolveReusesPythonCache(t *testing.T) {
	files := storiesFiles(t)
	cache := t.TempDir()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	repoDir := filepath.Join(cache, "models--TinyOrg--Tiny-Model")
	snap := filepath.Join(repoDir, "snapshots", commit)
	for _, d := range []string{filepath.Join(repoDir, "blobs"), snap, filepath.Join(repoDir, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		etag := etagOf(name, data)
		if err := os.WriteFile(filepath.Join(repoDir, "blobs", etag), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../blobs/"+etag, filepath.Join(snap, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, vars := range []map[string]string{{"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": cache}, {"HF_HOME": filepath.Dir(cache) + "/unused", "HF_HUB_CACHE": cache}} {
		opts := Options{Getenv: env(t, vars), Endpoint: "http://127.0.0.1:1"} // unreachable: must not be used
		dir, err := Resolve(context.Background(), "TinyOrg/Tiny-Model", opts)
		if err != nil {
			t.Fatal(err)
		}
		if dir != snap {
			t.Fatalf("resolved %s, want %s", dir, snap)
		}
	}
}

func TestList(t *testing.T) {
	h, files := newStoriesHub(t)
	cache := t.TempDir()
	if _, err := Resolve(context.Background(), storiesRepo, testOptions(t, h, cache)); err != nil {
		t.Fatal(err)
	}
	// A leftover partial download is reported apart.
	if err := os.WriteFile(filepath.Join(cache, "models--karpathy--stories260K", "blobs", "abc.incomplete"), make([]byte, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := List(cache)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, d := range files {
		total += int64(len(d))
	}
	if len(l.Models) != 1 {
		t.Fatalf("listed %d models, want 1: %+v", len(l.Models), l)
	}
	m := l.Models[0]
	if m.Repo != storiesRepo || m.Commit != h.repos[storiesRepo].commit || strings.Join(m.Refs, ",") != "main" ||
		m.Files != len(files) || m.Size != total || l.RepoSize[storiesRepo] != total || l.Incomplete != 10 {
		t.Fatalf("listing %+v (repo size %d, incomplete %d), want %d files of %d bytes at refs [main]",
			m, l.RepoSize[storiesRepo], l.Incomplete, len(files), total)
	}
	if l, err := List(filepath.Join(cache, "absent")); err != nil || len(l.Models) != 0 {
		t.Fatalf("missing cache: %+v, %v", l, err)
	}
}
