package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	gitSHARE = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// verifier checks a download against its ETag: an LFS file's ETag is the
// sha256 of its content; a regular git file's is its git blob id,
// sha1("blob <size>\x00" + content). Any other ETag (some mirrors) leaves
// only the size check.
type verifier struct {
	kind string // "sha256", "git-sha1" or ""
	h    hash.Hash
	want string
	size int64
}

func newVerifier(etag string, size int64) *verifier {
	v := &verifier{want: etag, size: size}
	switch {
	case sha256RE.MatchString(etag):
		v.kind, v.h = "sha256", sha256.New()
	case gitSHARE.MatchString(etag):
		v.kind, v.h = "git-sha1", sha1.New()
	}
	v.Reset()
	return v
}

func (v *verifier) Reset() {
	if v.h == nil {
		return
	}
	v.h.Reset()
	if v.kind == "git-sha1" {
		fmt.Fprintf(v.h, "blob %d\x00", v.size)
	}
}

func (v *verifier) Write(p []byte) (int, error) {
	if v.h != nil {
		v.h.Write(p)
	}
	return len(p), nil
}

func (v *verifier) check() error {
	if v.h == nil {
		return nil
	}
	if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
		return fmt.Errorf("%w: %s is %s, the hub's ETag says %s", ErrChecksum, v.kind, got, v.want)
	}
	return nil
}

// errPermanent marks a download failure that retrying cannot fix.
type errPermanent struct{ err error }

func (e errPermanent) Error() string { return e.err.Error() }
func (e errPermanent) Unwrap() error { return e.err }

// fetchFile makes snapshots/<commit>/<file> point at a verified blob,
// downloading it unless some process (ours or Python's) already has.
func (r *resolver) fetchFile(ctx context.Context, repo string, m fileMeta, task *Task) error {
	blob := r.cache.blobPath(repo, m.ETag)
	if fi, err := os.Stat(blob); err == nil && fi.Size() == m.Size {
		task.Skip(m.Size)
		return r.cache.linkBlob(repo, m.ETag, m.Commit, m.File)
	}
	unlock, err := lockFile(ctx, r.cache.lockPath(repo, m.ETag), func() {
		r.s.progress.Logf("%s: waiting for another download of the same file to finish", m.File)
	})
	if err != nil {
		return err
	}
	defer unlock()
	// Whoever held the lock may have finished the blob meanwhile.
	if fi, err := os.Stat(blob); err == nil && fi.Size() == m.Size {
		task.Skip(m.Size)
		return r.cache.linkBlob(repo, m.ETag, m.Commit, m.File)
	}
	if err := r.download(ctx, repo, m, blob, task); err != nil {
		return fmt.Errorf("download %s/%s: %w", repo, m.File, err)
	}
	return r.cache.linkBlob(repo, m.ETag, m.Commit, m.File)
}

// download writes blob via blob.incomplete, resuming what a previous
// attempt left there. The caller holds the blob's lock, so the partial
// file has no other writer.
func (r *resolver) download(ctx context.Context, repo string, m fileMeta, blob string, task *Task) error {
	part := blob + ".incomplete"
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return err
	}
	keep := false
	defer func() {
		_ = f.Close()
		if !keep {
			_ = os.Remove(part)
		}
	}()
	v := newVerifier(m.ETag, m.Size)
	off, err := resumeOffset(f, m.Size, v)
	if err != nil {
		return err
	}
	task.Skip(off)
	dl := &transfer{r: r, hc: r.client.downloadClient(), repo: repo, url: r.client.resolveURL(repo, m.Commit, m.File), f: f, v: v, task: task, size: m.Size, off: off}
	failures, wait := 0, r.s.retryWait
	for dl.off < m.Size {
		n, err := dl.once(ctx)
		if n > 0 {
			failures, wait = 0, r.s.retryWait
		}
		if err == nil {
			if dl.off >= m.Size {
				break
			}
			err = fmt.Errorf("connection closed at byte %d of %d", dl.off, m.Size)
		}
		var perm errPermanent
		if errors.As(err, &perm) {
			// A wrong file is not kept; a refused or failed write still is.
			keep = !errors.Is(err, ErrChecksum)
			return err
		}
		if ctx.Err() != nil {
			keep = true // resumable next time
			return fmt.Errorf("%w (stopped at byte %d of %d; run again to resume)", ctx.Err(), dl.off, m.Size)
		}
		failures++
		if failures > r.s.retries {
			keep = true
			return fmt.Errorf("%w (stopped at byte %d of %d; run again to resume)", err, dl.off, m.Size)
		}
		r.s.progress.Logf("%s: %v; resuming at byte %d", m.File, err, dl.off)
		if err := sleepCtx(ctx, wait); err != nil {
			keep = true
			return err
		}
		wait *= 2
	}
	if err := v.check(); err != nil {
		return fmt.Errorf("%w; the downloaded file was deleted, run again to retry", err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Rename(part, blob); err != nil {
		return err
	}
	keep = true // renamed away
	return nil
}

// resumeOffset returns how much of the partial file can be kept, feeding
// it to the verifier so the hash covers the whole file.
func resumeOffset(f *os.File, size int64, v *verifier) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off := fi.Size()
	if off > size {
		if err := f.Truncate(0); err != nil {
			return 0, err
		}
		return 0, nil
	}
	if off > 0 {
		if _, err := io.Copy(v, io.NewSectionReader(f, 0, off)); err != nil {
			return 0, fmt.Errorf("read partial download: %w", err)
		}
	}
	return off, nil
}

// transfer is one file's download state across retries.
type transfer struct {
	r    *resolver
	hc   *http.Client
	repo string
	url  string
	f    *os.File
	v    *verifier
	task *Task
	size int64
	off  int64
}

// restart discards the partial file when the server will not resume it.
func (t *transfer) restart() error {
	if err := t.f.Truncate(0); err != nil {
		return errPermanent{err}
	}
	t.task.Add(-t.off)
	t.off = 0
	t.v.Reset()
	return nil
}

// once issues one GET from t.off and copies what arrives; it returns the
// bytes gained and why it stopped early.
func (t *transfer) once(ctx context.Context) (int64, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := t.r.client.newRequest(rctx, http.MethodGet, t.url)
	if err != nil {
		return 0, errPermanent{err}
	}
	if t.off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", t.off))
	}
	// Cancel the request when no byte arrives for stallTimeout.
	stall := time.AfterFunc(t.r.s.stallTimeout, cancel)
	defer stall.Stop()
	resp, err := t.hc.Do(req)
	if err != nil {
		return 0, t.stalled(ctx, rctx, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != t.off {
			if err := t.restart(); err != nil {
				return 0, err
			}
			return 0, fmt.Errorf("server resumed at the wrong offset (Content-Range %q)", resp.Header.Get("Content-Range"))
		}
	case http.StatusOK:
		if t.off > 0 { // Range ignored: the body starts at byte 0
			if err := t.restart(); err != nil {
				return 0, err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if err := t.restart(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("server refused to resume (HTTP 416)")
	default:
		se := newStatusError(resp)
		if se.retryable() {
			return 0, se
		}
		return 0, errPermanent{explain(se, t.repo, "GET "+se.URL, t.r.s.endpoint, t.r.s.token != "")}
	}
	buf := make([]byte, 1<<20)
	var gained int64
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			stall.Reset(t.r.s.stallTimeout)
			if t.off+int64(n) > t.size {
				return gained, errPermanent{fmt.Errorf("%w: the server sent more than the %d bytes the hub announced", ErrChecksum, t.size)}
			}
			if _, err := t.f.WriteAt(buf[:n], t.off); err != nil {
				return gained, errPermanent{fmt.Errorf("write partial download: %w", err)}
			}
			t.v.Write(buf[:n])
			t.task.Add(int64(n))
			t.off += int64(n)
			gained += int64(n)
		}
		if rerr == io.EOF {
			return gained, nil
		}
		if rerr != nil {
			return gained, t.stalled(ctx, rctx, rerr)
		}
	}
}

// stalled names a stall (our own timer cancelled the request) as such.
func (t *transfer) stalled(ctx, rctx context.Context, err error) error {
	if ctx.Err() == nil && rctx.Err() != nil {
		return fmt.Errorf("no data for %s", t.r.s.stallTimeout)
	}
	return err
}

// contentRangeStart parses "bytes START-END/TOTAL".
func contentRangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	startStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(startStr), 10, 64)
	return n, err == nil
}
