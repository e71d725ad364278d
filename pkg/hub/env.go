package hub

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultEndpoint is the Hub used when neither Options.Endpoint nor
// $HF_ENDPOINT is set.
const DefaultEndpoint = "https://huggingface.co"

// Options controls Resolve. Zero values mean "as huggingface_hub would do
// it": every unset field falls back to the same environment variable the
// Python library reads, so both tools share one configuration.
type Options struct {
	// Endpoint is the Hub base URL; "" → $HF_ENDPOINT → DefaultEndpoint.
	Endpoint string
	// CacheDir is the hub cache root (the folder holding models--org--name);
	// "" → $HF_HUB_CACHE → $HUGGINGFACE_HUB_CACHE → $HF_HOME/hub →
	// $XDG_CACHE_HOME/huggingface/hub → ~/.cache/huggingface/hub.
	CacheDir string
	// Token is sent as "Authorization: Bearer"; "" → $HF_TOKEN →
	// $HUGGING_FACE_HUB_TOKEN → the token file ($HF_TOKEN_PATH or $HF_HOME/token).
	Token string
	// Offline uses the cache only. $HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE)
	// set to 1/ON/YES/TRUE forces it as well.
	Offline bool
	// Update asks the Hub for the revision's current commit even when a
	// complete snapshot is cached (what `lightllm pull` does). Without it a
	// complete cached snapshot is used with no network traffic at all.
	Update bool
	// Progress receives download progress; nil prints nothing.
	Progress *Reporter
	// HTTPClient is used for every request; nil → a client with connect and
	// header timeouts (downloads themselves have no overall deadline).
	HTTPClient *http.Client
	// Getenv reads the environment; nil → os.Getenv. Tests inject a map.
	Getenv func(string) string
	// Retries is how many times a download cut mid-way is resumed, and a
	// transient HTTP failure (429/5xx) retried; 0 → 5, negative → none.
	Retries int
	// RetryWait is the pause before a retry (doubled each time); 0 → 1s.
	RetryWait time.Duration
	// StallTimeout aborts a download that received no byte for this long;
	// 0 → 60s.
	StallTimeout time.Duration
}

// settings is Options with every default applied.
type settings struct {
	endpoint     string
	cacheDir     string
	token        string
	offline      bool
	update       bool
	progress     *Reporter
	client       *http.Client
	retries      int
	retryWait    time.Duration
	stallTimeout time.Duration
}

func (o Options) resolve() settings {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := settings{
		endpoint:     o.Endpoint,
		cacheDir:     o.CacheDir,
		token:        o.Token,
		offline:      o.Offline || envTrue(getenv("HF_HUB_OFFLINE")) || envTrue(getenv("TRANSFORMERS_OFFLINE")),
		update:       o.Update,
		progress:     o.Progress,
		client:       o.HTTPClient,
		retries:      o.Retries,
		retryWait:    o.RetryWait,
		stallTimeout: o.StallTimeout,
	}
	if s.endpoint == "" {
		s.endpoint = firstNonEmpty(getenv("HF_ENDPOINT"), DefaultEndpoint)
	}
	s.endpoint = strings.TrimRight(s.endpoint, "/")
	if s.cacheDir == "" {
		s.cacheDir = CacheDirFromEnv(getenv)
	}
	if s.token == "" {
		s.token = tokenFromEnv(getenv)
	}
	if s.client == nil {
		s.client = defaultClient()
	}
	switch {
	case s.retries == 0:
		s.retries = 5
	case s.retries < 0:
		s.retries = 0
	}
	if s.retryWait <= 0 {
		s.retryWait = time.Second
	}
	if s.stallTimeout <= 0 {
		s.stallTimeout = 60 * time.Second
	}
	return s
}

// CacheDirFromEnv returns the hub cache root following huggingface_hub's
// constants.py (HF_HUB_CACHE, then the legacy HUGGINGFACE_HUB_CACHE, then
// HF_HOME/hub, with HF_HOME defaulting to $XDG_CACHE_HOME/huggingface or
// ~/.cache/huggingface). getenv nil means os.Getenv.
func CacheDirFromEnv(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := firstNonEmpty(getenv("HF_HUB_CACHE"), getenv("HUGGINGFACE_HUB_CACHE")); d != "" {
		return expandHome(d, getenv)
	}
	return filepath.Join(hfHome(getenv), "hub")
}

func hfHome(getenv func(string) string) string {
	if h := getenv("HF_HOME"); h != "" {
		return expandHome(h, getenv)
	}
	base := getenv("XDG_CACHE_HOME")
	if base == "" {
		base = filepath.Join(homeDir(getenv), ".cache")
	}
	return filepath.Join(expandHome(base, getenv), "huggingface")
}

// tokenFromEnv mirrors huggingface_hub's get_token: environment first, then
// the token file written by `hf auth login`.
func tokenFromEnv(getenv func(string) string) string {
	if t := cleanToken(firstNonEmpty(getenv("HF_TOKEN"), getenv("HUGGING_FACE_HUB_TOKEN"))); t != "" {
		return t
	}
	p := getenv("HF_TOKEN_PATH")
	if p == "" {
		p = filepath.Join(hfHome(getenv), "token")
	}
	b, err := os.ReadFile(expandHome(p, getenv))
	if err != nil {
		return "" // no token file is the normal case for public models
	}
	return cleanToken(string(b))
}

func cleanToken(t string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", "", "\n", "").Replace(t))
}

// envTrue matches huggingface_hub's _is_true.
func envTrue(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

func expandHome(p string, getenv func(string) string) string {
	if p == "~" {
		return homeDir(getenv)
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(homeDir(getenv), p[2:])
	}
	return p
}

func defaultClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 30 * time.Second
	tr.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: tr}
}
