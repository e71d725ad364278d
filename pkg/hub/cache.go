package hub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Cache is a huggingface_hub cache root (by default ~/.cache/huggingface/hub).
// Its layout is exactly the Python library's, so either tool reuses the
// other's downloads:
//
//	models--org--name/
//	  blobs/<etag>                       file contents, named by normalized ETag
//	  blobs/<etag>.incomplete            a download in progress (resumable)
//	  snapshots/<commit>/<file>          -> ../../blobs/<etag> (relative symlink)
//	  refs/<revision>                    the commit hash, no trailing newline
//	  .no_exist/<commit>/<file>          empty: the file is known not to exist
//	.locks/models--org--name/<etag>.lock flock(2) held while a blob is written
//	CACHEDIR.TAG                         tells backup tools to skip the cache
type Cache struct {
	Dir string
}

func (c Cache) repoDir(repo string) string { return filepath.Join(c.Dir, repoFolderName(repo)) }

func (c Cache) blobPath(repo, etag string) string {
	return filepath.Join(c.repoDir(repo), "blobs", etag)
}

// SnapshotDir is the folder holding one commit's files.
func (c Cache) SnapshotDir(repo, commit string) string {
	return filepath.Join(c.repoDir(repo), "snapshots", commit)
}

func (c Cache) pointerPath(repo, commit, file string) string {
	return filepath.Join(c.SnapshotDir(repo, commit), filepath.FromSlash(file))
}

func (c Cache) refPath(repo, rev string) string {
	return filepath.Join(c.repoDir(repo), "refs", filepath.FromSlash(rev))
}

func (c Cache) noExistPath(repo, commit, file string) string {
	return filepath.Join(c.repoDir(repo), ".no_exist", commit, filepath.FromSlash(file))
}

// lockPath is where huggingface_hub's hf_hub_download takes its FileLock, so
// a Python download and ours of the same blob exclude each other.
func (c Cache) lockPath(repo, etag string) string {
	return filepath.Join(c.Dir, ".locks", repoFolderName(repo), etag+".lock")
}

// readRef returns the commit a branch or tag pointed to when last resolved.
// A commit hash resolves to itself. The error wraps fs.ErrNotExist when the
// ref was never written.
func (c Cache) readRef(repo, rev string) (string, error) {
	if isCommitHash(rev) {
		return rev, nil
	}
	b, err := os.ReadFile(c.refPath(repo, rev))
	if err != nil {
		return "", fmt.Errorf("read ref %s of %s: %w", rev, repo, err)
	}
	commit := strings.TrimSpace(string(b))
	if !isCommitHash(commit) {
		return "", fmt.Errorf("read ref %s of %s: %q is not a commit hash", rev, repo, commit)
	}
	return commit, nil
}

// writeRef records rev → commit the way _cache_commit_hash_for_specific_revision
// does: nothing for a commit hash, no rewrite when unchanged (the cache may be
// read-only), otherwise a temp file renamed into place so readers never see a
// partial ref.
func (c Cache) writeRef(repo, rev, commit string) error {
	if rev == commit {
		return nil
	}
	p := c.refPath(repo, rev)
	if b, err := os.ReadFile(p); err == nil && string(b) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write ref %s: %w", p, err)
	}
	f, err := createUnique(filepath.Dir(p), filepath.Base(p), ".tmp")
	if err != nil {
		return fmt.Errorf("write ref %s: %w", p, err)
	}
	_, werr := f.WriteString(commit)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write ref %s: %w", p, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write ref %s: %w", p, err)
	}
	return nil
}

// linkBlob points snapshots/<commit>/<file> at blobs/<etag> with a relative
// symlink (huggingface_hub's _create_symlink). The link is made under a
// temporary name and renamed over the pointer, so two processes linking the
// same file at once both succeed and a reader never sees it missing.
func (c Cache) linkBlob(repo, etag, commit, file string) error {
	ptr := c.pointerPath(repo, commit, file)
	blob := c.blobPath(repo, etag)
	rel, err := filepath.Rel(filepath.Dir(ptr), blob)
	if err != nil {
		return fmt.Errorf("link %s: %w", ptr, err)
	}
	if cur, err := os.Readlink(ptr); err == nil && cur == rel {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(ptr), 0o755); err != nil {
		return fmt.Errorf("link %s: %w", ptr, err)
	}
	tmp := ptr + "." + randomHex() + ".tmp"
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("link %s: %w", ptr, err)
	}
	if err := os.Rename(tmp, ptr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("link %s: %w", ptr, err)
	}
	return nil
}

// markNoExist records that file is absent at commit, as hf_hub_download does
// on a 404, so Python loaders skip the HEAD request for it too. Best effort:
// the marker is an optimisation only.
func (c Cache) markNoExist(repo, commit, file string) {
	p := c.noExistPath(repo, commit, file)
	if _, err := os.Stat(p); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o666); err == nil {
		_ = f.Close()
	}
}

// hasFile reports whether the snapshot holds file and it resolves to a
// regular file (a symlink to a missing blob does not count).
func (c Cache) hasFile(repo, commit, file string) bool {
	fi, err := os.Stat(c.pointerPath(repo, commit, file))
	return err == nil && fi.Mode().IsRegular()
}

// tag writes CACHEDIR.TAG once, like huggingface_hub; failure is harmless.
func (c Cache) tag() {
	p := filepath.Join(c.Dir, "CACHEDIR.TAG")
	if _, err := os.Stat(p); err == nil {
		return
	}
	const content = "Signature: 8a477f597d28d172789f06886806bc55\n" +
		"# This file is a cache directory tag created by huggingface_hub.\n" +
		"# For information about cache directory tags, see:\n" +
		"#\thttps://bford.info/cachedir/\n"
	_ = os.WriteFile(p, []byte(content), 0o644)
}

// Files an HF-layout model needs besides its weights. Required ones must be
// present; the others are fetched when the repository has them.
var (
	requiredHFFiles = []string{"config.json", "tokenizer.json"}
	optionalHFFiles = []string{"generation_config.json", "tokenizer_config.json", "special_tokens_map.json"}
)

const (
	singleWeights = "model.safetensors"
	shardIndex    = "model.safetensors.index.json"
)

// missingFile returns the first file an engine needs that the cached snapshot
// lacks, or "" when the snapshot is complete for sp.
func (c Cache) missingFile(repo, commit string, sp Spec) (string, error) {
	if sp.File != "" {
		if !c.hasFile(repo, commit, sp.File) {
			return sp.File, nil
		}
		return "", nil
	}
	for _, f := range requiredHFFiles {
		if !c.hasFile(repo, commit, f) {
			return f, nil
		}
	}
	if c.hasFile(repo, commit, singleWeights) {
		return "", nil
	}
	if !c.hasFile(repo, commit, shardIndex) {
		return singleWeights, nil
	}
	shards, err := readShardIndex(c.pointerPath(repo, commit, shardIndex))
	if err != nil {
		return "", err
	}
	for _, s := range shards {
		if !c.hasFile(repo, commit, s) {
			return s, nil
		}
	}
	return "", nil
}

// readShardIndex lists the distinct shard files of a safetensors index.
func readShardIndex(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read shard index: %w", err)
	}
	return parseShardIndex(b)
}

func parseShardIndex(b []byte) ([]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("parse %s: %w", shardIndex, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("parse %s: empty weight_map", shardIndex)
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range idx.WeightMap {
		if seen[f] {
			continue
		}
		if err := validateRepoFile(f); err != nil {
			return nil, fmt.Errorf("parse %s: shard: %w", shardIndex, err)
		}
		seen[f] = true
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// createUnique creates dir/prefix.<random>suffix exclusively with mode 0666
// (less umask), the mode Python gives its cache files.
func createUnique(dir, prefix, suffix string) (*os.File, error) {
	for range 10 {
		f, err := os.OpenFile(filepath.Join(dir, prefix+"."+randomHex()+suffix), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create temporary file in %s: too many collisions", dir)
}

func randomHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
