package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// userAgent identifies us to the Hub like other hub clients do.
const userAgent = "lightllm-go; hf_hub-compatible"

// client speaks the Hub's HTTP API: the model-info endpoint for a revision's
// commit and file list, and /resolve/ for file metadata (HEAD) and contents.
type client struct {
	s settings
}

type revisionInfo struct {
	SHA      string    `json:"sha"`
	Siblings []sibling `json:"siblings"`
}

type sibling struct {
	RFilename string `json:"rfilename"`
}

func (ri revisionInfo) has(file string) bool {
	for _, s := range ri.Siblings {
		if s.RFilename == file {
			return true
		}
	}
	return false
}

// fileMeta is what a HEAD on /resolve/ tells about one file
// (huggingface_hub's HfFileMetadata).
type fileMeta struct {
	File   string
	Commit string // X-Repo-Commit
	ETag   string // normalized X-Linked-Etag or ETag: the blob's name in the cache
	Size   int64  // X-Linked-Size or Content-Length
}

// normalizeETag is huggingface_hub's _normalize_etag: etag.lstrip("W/").strip('"').
// lstrip removes any leading run of 'W' and '/' characters, not the prefix.
func normalizeETag(etag string) string {
	return strings.Trim(strings.TrimLeft(etag, "W/"), `"`)
}

// resolveURL is hf_hub_url: {endpoint}/{repo}/resolve/{quote(rev, safe="")}/{quote(file)}.
func (c *client) resolveURL(repo, rev, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.s.endpoint + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(segs, "/")
}

func (c *client) newRequest(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, fmt.Errorf("build request %s: %w", u, err)
	}
	req.Header.Set("User-Agent", userAgent)
	// Compression would change sizes and break Range offsets.
	req.Header.Set("Accept-Encoding", "identity")
	// The token only ever goes to the endpoint itself; Go drops it on a
	// redirect to another host (the CDN URL is signed).
	if c.s.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.s.token)
	}
	return req, nil
}

// downloadClient follows redirects for GET but, like huggingface_hub,
// sends the token only to the endpoint's own host (and port): the CDN URL a
// file redirects to is signed. Go alone would keep it for any subdomain.
func (c *client) downloadClient() *http.Client {
	hc := *c.s.client
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Host != via[0].URL.Host {
			req.Header.Del("Authorization")
		}
		return nil
	}
	return &hc
}

// withRetry runs op again after a 429/5xx answer, waiting retryWait, 2×, 4×…
// Network errors are not retried here: metadata calls fail fast and say so.
func (c *client) withRetry(ctx context.Context, op func() error) error {
	wait := c.s.retryWait
	for attempt := 0; ; attempt++ {
		err := op()
		var se *httpStatusError
		if err == nil || !errors.As(err, &se) || !se.retryable() || attempt >= c.s.retries {
			return err
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
		wait *= 2
	}
}

// revision returns the commit and file list of repo at rev.
func (c *client) revision(ctx context.Context, repo, rev string) (revisionInfo, error) {
	u := c.s.endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(rev)
	var info revisionInfo
	err := c.withRetry(ctx, func() error {
		req, err := c.newRequest(ctx, http.MethodGet, u)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := c.s.client.Do(req)
		if err != nil {
			return unreachable(c.s.endpoint, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return newStatusError(resp)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return fmt.Errorf("read %s: %w", u, err)
		}
		if err := json.Unmarshal(body, &info); err != nil {
			return fmt.Errorf("parse %s: %w", u, err)
		}
		return nil
	})
	if err != nil {
		return revisionInfo{}, c.explain(err, repo, fmt.Sprintf("look up %s@%s", repo, rev))
	}
	if !isCommitHash(info.SHA) {
		return revisionInfo{}, fmt.Errorf("look up %s@%s: the hub answered commit %q, not a 40-hex hash", repo, rev, info.SHA)
	}
	return info, nil
}

// head fetches a file's metadata at a commit. Like get_hf_file_metadata it
// follows only same-host redirects (a renamed repo): the answer that
// redirects to the CDN is the one carrying X-Linked-Etag and X-Linked-Size.
func (c *client) head(ctx context.Context, repo, commit, file string) (fileMeta, error) {
	u := c.resolveURL(repo, commit, file)
	hc := *c.s.client
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Host != via[0].URL.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}
	var m fileMeta
	err := c.withRetry(ctx, func() error {
		req, err := c.newRequest(ctx, http.MethodHead, u)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return unreachable(c.s.endpoint, err)
		}
		_ = resp.Body.Close()
		redirect := resp.StatusCode >= 300 && resp.StatusCode < 400
		if resp.StatusCode != http.StatusOK && !redirect {
			return newStatusError(resp)
		}
		m = fileMeta{
			File:   file,
			Commit: resp.Header.Get("X-Repo-Commit"),
			ETag:   normalizeETag(firstNonEmpty(resp.Header.Get("X-Linked-Etag"), resp.Header.Get("ETag"))),
			Size:   -1,
		}
		size := resp.Header.Get("X-Linked-Size")
		if size == "" && !redirect {
			size = resp.Header.Get("Content-Length")
		}
		if n, err := strconv.ParseInt(size, 10, 64); err == nil && n >= 0 {
			m.Size = n
		}
		return nil
	})
	what := fmt.Sprintf("%s@%s: %s", repo, shortCommit(commit), file)
	if err != nil {
		return fileMeta{}, c.explain(err, repo, what)
	}
	switch {
	case m.Commit == "":
		return fileMeta{}, fmt.Errorf("%s: %s does not look like a Hugging Face Hub (no X-Repo-Commit header); check HF_ENDPOINT", what, c.s.endpoint)
	case m.Commit != commit:
		return fileMeta{}, fmt.Errorf("%s: the hub served commit %s for a request pinned to %s", what, m.Commit, commit)
	case m.ETag == "" || strings.ContainsAny(m.ETag, `/\`) || m.ETag == "." || m.ETag == "..":
		return fileMeta{}, fmt.Errorf("%s: the hub sent no usable ETag (%q), so the file cannot be cached or verified", what, m.ETag)
	case m.Size < 0:
		return fileMeta{}, fmt.Errorf("%s: the hub sent no file size (X-Linked-Size / Content-Length)", what)
	}
	return m, nil
}

// explain maps an HTTP status error to the user-facing message; other
// errors are only given context.
func (c *client) explain(err error, repo, what string) error {
	var se *httpStatusError
	if errors.As(err, &se) {
		return explain(se, repo, what, c.s.endpoint, c.s.token != "")
	}
	return fmt.Errorf("%s: %w", what, err)
}

// unreachable wraps a transport error with what to do about it.
func unreachable(endpoint string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("cannot reach %s (set HF_ENDPOINT for a mirror, or HF_HUB_OFFLINE=1 to use only cached models): %w", endpoint, err)
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
