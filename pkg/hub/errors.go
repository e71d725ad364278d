package hub

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinel errors; every error Resolve returns wraps at most one of them, so
// callers can branch with errors.Is.
var (
	// ErrNotCached: offline mode and the model is not (completely) cached.
	ErrNotCached = errors.New("model not in the local cache")
	// ErrAuth: the Hub answered 401 or 403 (private, gated, or a bad token).
	ErrAuth = errors.New("hub authentication failed")
	// ErrNotFound: the repository, revision or file does not exist.
	ErrNotFound = errors.New("not found on the hub")
	// ErrChecksum: a downloaded file does not match the Hub's size or hash.
	ErrChecksum = errors.New("downloaded file does not match the hub's checksum")
)

// httpStatusError is a non-success answer from the Hub, kept for errors.As.
type httpStatusError struct {
	Status  int
	Code    string // X-Error-Code, e.g. GatedRepo, RepoNotFound
	Message string // X-Error-Message
	URL     string
}

func (e *httpStatusError) Error() string {
	msg := fmt.Sprintf("HTTP %d from %s", e.Status, e.URL)
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	if e.Message != "" {
		msg += ": " + oneLine(e.Message)
	}
	return msg
}

// retryable reports whether the same request may succeed a moment later.
func (e *httpStatusError) retryable() bool {
	switch e.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func newStatusError(resp *http.Response) *httpStatusError {
	return &httpStatusError{
		Status:  resp.StatusCode,
		Code:    resp.Header.Get("X-Error-Code"),
		Message: resp.Header.Get("X-Error-Message"),
		URL:     resp.Request.URL.Redacted(),
	}
}

// explain turns a Hub status into the one-line error a user can act on.
// what names the object asked for ("org/name", "org/name@rev: file").
func explain(e *httpStatusError, repo, what, endpoint string, haveToken bool) error {
	switch {
	case e.Code == "GatedRepo" || (e.Status == http.StatusForbidden && strings.Contains(strings.ToLower(e.Message), "gated")):
		return fmt.Errorf("%s: %w: %s is a gated model: accept its conditions at %s/%s, then set HF_TOKEN to an access token of that account (%v)",
			what, ErrAuth, repo, endpoint, repo, e)
	case e.Status == http.StatusUnauthorized && haveToken:
		return fmt.Errorf("%s: %w: the token from HF_TOKEN was rejected (invalid or expired, or without access to %s) (%v)",
			what, ErrAuth, repo, e)
	case e.Status == http.StatusUnauthorized:
		return fmt.Errorf("%s: %w: %s does not exist or is private/gated: if it needs access, set HF_TOKEN to an access token with read permission (%v)",
			what, ErrAuth, repo, e)
	case e.Status == http.StatusForbidden:
		return fmt.Errorf("%s: %w: access to %s is denied: set HF_TOKEN to a token with read access to it (%v)",
			what, ErrAuth, repo, e)
	case e.Status == http.StatusNotFound && e.Code == "RevisionNotFound":
		return fmt.Errorf("%s: %w: no such revision (%v)", what, ErrNotFound, e)
	case e.Status == http.StatusNotFound && e.Code == "EntryNotFound":
		return fmt.Errorf("%s: %w: no such file in the repository (%v)", what, ErrNotFound, e)
	case e.Status == http.StatusNotFound:
		return fmt.Errorf("%s: %w: repository %s does not exist (%v)", what, ErrNotFound, repo, e)
	}
	return fmt.Errorf("%s: %w", what, e)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
