package hub

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// DefaultRevision is the branch used when a spec names no revision, as in
// huggingface_hub.
const DefaultRevision = "main"

// Spec is a parsed Hub model reference: org/name[@revision][:file.gguf].
type Spec struct {
	Repo     string // "org/name"
	Revision string // branch, tag or 40-hex commit; DefaultRevision when omitted
	File     string // repo-relative .gguf path, empty for an HF (safetensors) model
}

// String renders the spec back in the accepted syntax.
func (s Spec) String() string {
	out := s.Repo
	if s.Revision != "" && s.Revision != DefaultRevision {
		out += "@" + s.Revision
	}
	if s.File != "" {
		out += ":" + s.File
	}
	return out
}

// repoPart follows huggingface_hub's validate_repo_id: word characters, '-'
// and '.', at most 96 characters, starting and ending with a word character.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$`)

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// isCommitHash reports whether rev is a full commit id (REGEX_COMMIT_HASH).
func isCommitHash(rev string) bool { return commitRE.MatchString(rev) }

// ParseSpec parses a Hub id. It does not look at the file system; Resolve
// decides between a local path and a Hub id.
func ParseSpec(s string) (Spec, error) {
	bad := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("parse model id %q: %s (want org/name[@revision][:file.gguf])", s, why)
	}
	rest := s
	var sp Spec
	// A git ref cannot contain ':' so the first ':' always starts the file.
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		sp.File = rest[i+1:]
		rest = rest[:i]
		if err := validateRepoFile(sp.File); err != nil {
			return bad(err.Error())
		}
		if !strings.HasSuffix(strings.ToLower(sp.File), ".gguf") {
			return bad(fmt.Sprintf("file %q is not a .gguf file", sp.File))
		}
	}
	sp.Revision = DefaultRevision
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		sp.Revision = rest[i+1:]
		rest = rest[:i]
		if err := validateRevision(sp.Revision); err != nil {
			return bad(err.Error())
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 {
		return bad("the repository must be org/name")
	}
	for _, p := range parts {
		if !repoPart.MatchString(p) || strings.Contains(p, "--") || strings.Contains(p, "..") {
			return bad(fmt.Sprintf("invalid repository name part %q", p))
		}
	}
	if strings.HasSuffix(parts[1], ".git") {
		return bad("the repository name must not end with .git")
	}
	sp.Repo = rest
	return sp, nil
}

// validateRevision rejects revisions that would escape refs/ or snapshots/
// once used as a path (refs/pr/1 is legal and nests directories).
func validateRevision(rev string) error {
	if rev == "" {
		return fmt.Errorf("empty revision")
	}
	if strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.Contains(rev, "\\") {
		return fmt.Errorf("invalid revision %q", rev)
	}
	for _, seg := range strings.Split(rev, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, " ~^?*[\x00") {
			return fmt.Errorf("invalid revision %q", rev)
		}
	}
	return nil
}

// validateRepoFile rejects file names that would escape the snapshot folder
// (huggingface_hub's _validate_relative_filename / _get_pointer_path check).
func validateRepoFile(f string) error {
	if f == "" {
		return fmt.Errorf("empty file name")
	}
	if strings.HasPrefix(f, "/") || strings.Contains(f, "\\") || strings.ContainsRune(f, 0) {
		return fmt.Errorf("invalid file name %q", f)
	}
	if path.Clean(f) != f {
		return fmt.Errorf("invalid file name %q", f)
	}
	for _, seg := range strings.Split(f, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("invalid file name %q", f)
		}
	}
	return nil
}

// repoFolderName is huggingface_hub's repo_folder_name for models:
// "models--org--name".
func repoFolderName(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}
