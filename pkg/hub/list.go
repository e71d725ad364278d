package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// CachedModel is one cached snapshot (a repository at one commit).
type CachedModel struct {
	Repo     string    // org/name
	Commit   string    // snapshot folder name
	Refs     []string  // revisions (branches, tags) that point at Commit, sorted
	Files    int       // files in the snapshot
	Size     int64     // bytes of the distinct blobs the snapshot uses
	Path     string    // the snapshot folder
	Modified time.Time // newest blob modification
}

// Listing is what List finds in a cache.
type Listing struct {
	Models []CachedModel
	// RepoSize is each repository's size on disk: distinct blobs of all its
	// snapshots (a blob shared by two commits counts once).
	RepoSize map[string]int64
	// Incomplete is the bytes held by unfinished downloads (*.incomplete).
	Incomplete int64
	// Warnings name folders that do not follow the layout (skipped).
	Warnings []string
}

// List scans a hub cache for models the way huggingface_hub's
// scan_cache_dir does (datasets and spaces are ignored). A missing cache is
// an empty listing, not an error.
func List(cacheDir string) (Listing, error) {
	var out Listing
	out.RepoSize = map[string]int64{}
	entries, err := os.ReadDir(cacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("list cache %s: %w", cacheDir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "models--") {
			continue
		}
		repo := strings.ReplaceAll(strings.TrimPrefix(name, "models--"), "--", "/")
		models, size, partial, err := scanRepo(filepath.Join(cacheDir, name), repo)
		out.Incomplete += partial
		if err != nil {
			out.Warnings = append(out.Warnings, err.Error())
			continue
		}
		out.RepoSize[repo] = size
		out.Models = append(out.Models, models...)
	}
	sort.Slice(out.Models, func(i, j int) bool {
		a, b := out.Models[i], out.Models[j]
		if a.Repo != b.Repo {
			return a.Repo < b.Repo
		}
		return a.Modified.After(b.Modified)
	})
	return out, nil
}

func scanRepo(dir, repo string) (models []CachedModel, size, partial int64, err error) {
	if blobs, err := filepath.Glob(filepath.Join(dir, "blobs", "*.incomplete")); err == nil {
		for _, b := range blobs {
			if fi, err := os.Stat(b); err == nil {
				partial += fi.Size()
			}
		}
	}
	refsByCommit := map[string][]string{}
	refsDir := filepath.Join(dir, "refs")
	werr := filepath.WalkDir(refsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == refsDir {
				return fs.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(refsDir, p)
		commit := strings.TrimSpace(string(b))
		refsByCommit[commit] = append(refsByCommit[commit], filepath.ToSlash(rel))
		return nil
	})
	if werr != nil {
		return nil, 0, partial, fmt.Errorf("%s: refs: %w", repo, werr)
	}
	snaps, err := os.ReadDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		return nil, 0, partial, fmt.Errorf("%s: snapshots: %w", repo, err)
	}
	repoBlobs := map[string]int64{}
	for _, s := range snaps {
		if !s.IsDir() {
			continue
		}
		m := CachedModel{Repo: repo, Commit: s.Name(), Path: filepath.Join(dir, "snapshots", s.Name())}
		blobs := map[string]int64{}
		werr := filepath.WalkDir(m.Path, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return nil // broken link: a blob removed by hand; not counted
			}
			fi, err := os.Stat(real)
			if err != nil {
				return nil
			}
			m.Files++
			blobs[real] = fi.Size()
			if fi.ModTime().After(m.Modified) {
				m.Modified = fi.ModTime()
			}
			return nil
		})
		if werr != nil {
			return nil, 0, partial, fmt.Errorf("%s: snapshot %s: %w", repo, s.Name(), werr)
		}
		for b, n := range blobs {
			m.Size += n
			repoBlobs[b] = n
		}
		m.Refs = refsByCommit[m.Commit]
		sort.Strings(m.Refs)
		models = append(models, m)
	}
	for _, n := range repoBlobs {
		size += n
	}
	return models, size, partial, nil
}
