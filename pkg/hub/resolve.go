package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BuiltinPrefix marks models built in memory by the model loader (e.g.
// "builtin:tiny-random"); Resolve hands such specs back unchanged.
const BuiltinPrefix = "builtin:"

// Resolve turns a model spec into a local path the model loader can open:
//   - an existing file or directory (HF folder, .gguf file) is returned as is;
//   - "builtin:NAME" is returned as is, for the loader;
//   - a Hub id "org/name[@revision][:file.gguf]" is looked up in the
//     huggingface_hub cache and downloaded into it when missing. The result
//     is the snapshot folder (config.json, tokenizer files, safetensors), or
//     for ":file.gguf" the path of that file.
//
// A completely cached model is used without any network traffic unless
// opts.Update is set. In offline mode (opts.Offline or HF_HUB_OFFLINE=1) a
// model that is not cached is an error wrapping ErrNotCached whose text, one
// line, says what to do.
func Resolve(ctx context.Context, spec string, opts Options) (string, error) {
	if p, ok, err := localPath(spec, opts.Getenv); ok || err != nil {
		return p, err
	}
	sp, err := ParseSpec(spec)
	if err != nil {
		return "", err
	}
	r := newResolver(opts)
	return r.resolve(ctx, sp)
}

// localPath decides whether spec names something on the local file system.
func localPath(spec string, getenv func(string) string) (string, bool, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch {
	case strings.TrimSpace(spec) == "":
		return "", false, errors.New("no model given: pass a local path or a Hub id (org/name)")
	case strings.HasPrefix(spec, BuiltinPrefix):
		return spec, true, nil
	}
	p := expandHome(spec, getenv)
	if _, err := os.Stat(p); err == nil {
		return p, true, nil
	}
	pathLike := filepath.IsAbs(p) || p == "." || p == ".." || strings.HasPrefix(spec, "~") ||
		strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../")
	if pathLike {
		return "", false, fmt.Errorf("model path %s: %w", p, fs.ErrNotExist)
	}
	return "", false, nil
}

type resolver struct {
	s      settings
	cache  Cache
	client *client
}

func newResolver(opts Options) *resolver {
	s := opts.resolve()
	return &resolver{s: s, cache: Cache{Dir: s.cacheDir}, client: &client{s: s}}
}

func (r *resolver) resolve(ctx context.Context, sp Spec) (string, error) {
	if !r.s.update || r.s.offline {
		if p, ok := r.cached(sp); ok {
			return p, nil
		}
	}
	if r.s.offline {
		return "", r.notCachedError(sp)
	}
	return r.fetch(ctx, sp)
}

// cached returns the model's path when the cache holds everything the
// engine needs for the commit the revision last resolved to.
func (r *resolver) cached(sp Spec) (string, bool) {
	commit, err := r.cache.readRef(sp.Repo, sp.Revision)
	if err != nil {
		return "", false
	}
	if missing, err := r.cache.missingFile(sp.Repo, commit, sp); err != nil || missing != "" {
		return "", false
	}
	return r.modelPath(sp, commit), true
}

func (r *resolver) modelPath(sp Spec, commit string) string {
	if sp.File != "" {
		return r.cache.pointerPath(sp.Repo, commit, sp.File)
	}
	return r.cache.SnapshotDir(sp.Repo, commit)
}

// notCachedError is the one-line message for offline mode.
func (r *resolver) notCachedError(sp Spec) error {
	why := "is not in the cache"
	if commit, err := r.cache.readRef(sp.Repo, sp.Revision); err == nil {
		if missing, err := r.cache.missingFile(sp.Repo, commit, sp); err == nil && missing != "" {
			why = fmt.Sprintf("is only partly cached (no %s)", missing)
		}
	}
	return fmt.Errorf("model %s %s at %s and offline mode (HF_HUB_OFFLINE) forbids downloading: run `lightllm pull %s` with network access, or unset HF_HUB_OFFLINE: %w",
		sp, why, r.s.cacheDir, sp, ErrNotCached)
}

// fetch asks the Hub for the revision's commit, then downloads what is missing.
func (r *resolver) fetch(ctx context.Context, sp Spec) (string, error) {
	info, err := r.client.revision(ctx, sp.Repo, sp.Revision)
	if err != nil {
		return "", err
	}
	commit := info.SHA
	snap := r.cache.SnapshotDir(sp.Repo, commit)
	if missing, err := r.cache.missingFile(sp.Repo, commit, sp); err == nil && missing == "" {
		if err := r.cache.writeRef(sp.Repo, sp.Revision, commit); err != nil {
			return "", err
		}
		return r.modelPath(sp, commit), nil
	}
	small, weights, err := planFiles(sp, info)
	if err != nil {
		return "", err
	}
	// Ask about the small files before writing anything, so a gated or
	// broken repository leaves no empty snapshot behind.
	metas, err := r.headMissing(ctx, sp.Repo, commit, small)
	if err != nil {
		return "", err
	}
	weightMetas, err := r.headMissing(ctx, sp.Repo, commit, weights)
	if err != nil {
		return "", err
	}
	// The snapshot folder exists before its ref, so the cache never holds a
	// ref to a missing snapshot (huggingface_hub's scan calls that corrupt).
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return "", fmt.Errorf("create snapshot folder: %w", err)
	}
	if err := r.cache.writeRef(sp.Repo, sp.Revision, commit); err != nil {
		return "", err
	}
	r.cache.tag()
	for _, f := range optionalHFFiles {
		if sp.File == "" && !info.has(f) {
			r.cache.markNoExist(sp.Repo, commit, f)
		}
	}
	// Small files first (config, tokenizer, the shard index), one by one.
	for _, m := range metas {
		if err := r.fetchFile(ctx, sp.Repo, m, nil); err != nil {
			return "", err
		}
	}
	if len(weights) == 0 { // sharded: the index names the shards
		shards, err := readShardIndex(r.cache.pointerPath(sp.Repo, commit, shardIndex))
		if err != nil {
			return "", fmt.Errorf("%s: %w", sp, err)
		}
		for _, s := range shards {
			if !info.has(s) {
				return "", fmt.Errorf("%s: %s names shard %s, which the repository does not have: %w", sp, shardIndex, s, ErrNotFound)
			}
		}
		if weightMetas, err = r.headMissing(ctx, sp.Repo, commit, shards); err != nil {
			return "", err
		}
	}
	if err := r.fetchWeights(ctx, sp.Repo, weightMetas); err != nil {
		return "", err
	}
	if missing, err := r.cache.missingFile(sp.Repo, commit, sp); err != nil || missing != "" {
		return "", fmt.Errorf("%s: snapshot %s is incomplete after download (missing %q): %v", sp, snap, missing, err)
	}
	return r.modelPath(sp, commit), nil
}

// headMissing fetches the metadata of the files the snapshot lacks.
func (r *resolver) headMissing(ctx context.Context, repo, commit string, files []string) ([]fileMeta, error) {
	var metas []fileMeta
	for _, f := range files {
		if r.cache.hasFile(repo, commit, f) {
			continue
		}
		m, err := r.client.head(ctx, repo, commit, f)
		if err != nil {
			return nil, err
		}
		metas = append(metas, m)
	}
	return metas, nil
}

// fetchWeights downloads the large files under one progress task, so the
// bar shows the whole model's bytes, rate and ETA.
func (r *resolver) fetchWeights(ctx context.Context, repo string, metas []fileMeta) error {
	if len(metas) == 0 {
		return nil
	}
	var total int64
	for _, m := range metas {
		total += m.Size
	}
	task := r.s.progress.Start("download "+repo, total)
	for _, m := range metas {
		if err := r.fetchFile(ctx, repo, m, task); err != nil {
			task.Done(err)
			return err
		}
	}
	task.Done(nil)
	return nil
}

// planFiles lists what to fetch: small files, then the weights (nil
// weights with no error means sharded: read the index, in small, first).
func planFiles(sp Spec, info revisionInfo) (small, weights []string, err error) {
	var ggufs []string
	for _, s := range info.Siblings {
		if strings.HasSuffix(strings.ToLower(s.RFilename), ".gguf") {
			ggufs = append(ggufs, s.RFilename)
		}
	}
	sort.Strings(ggufs)
	hint := ""
	if len(ggufs) > 0 {
		hint = fmt.Sprintf("; it has GGUF files, pick one as %s:%s", sp.Repo, ggufs[0])
		if len(ggufs) > 1 {
			hint += fmt.Sprintf(" (others: %s)", strings.Join(ggufs[1:], ", "))
		}
	}
	if sp.File != "" {
		if !info.has(sp.File) {
			avail := "none"
			if len(ggufs) > 0 {
				avail = strings.Join(ggufs, ", ")
			}
			return nil, nil, fmt.Errorf("%s: no file %s in the repository (GGUF files there: %s): %w", sp, sp.File, avail, ErrNotFound)
		}
		return nil, []string{sp.File}, nil
	}
	for _, f := range requiredHFFiles {
		if !info.has(f) {
			return nil, nil, fmt.Errorf("%s: the repository has no %s, which the engine needs%s: %w", sp, f, hint, ErrNotFound)
		}
	}
	small = append(small, requiredHFFiles...)
	for _, f := range optionalHFFiles {
		if info.has(f) {
			small = append(small, f)
		}
	}
	switch {
	case info.has(singleWeights):
		return small, []string{singleWeights}, nil
	case info.has(shardIndex):
		return append(small, shardIndex), nil, nil
	}
	return nil, nil, fmt.Errorf("%s: the repository has neither %s nor %s (only safetensors weights are supported)%s: %w",
		sp, singleWeights, shardIndex, hint, ErrNotFound)
}
