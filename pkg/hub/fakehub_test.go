package hub

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub is a test double for the Hugging Face Hub: an httptest server
// speaking /api/models/{repo}/revision/{rev} and /{repo}/resolve/{rev}/{file}
// (HEAD and GET), plus a second server standing in for the CDN that LFS
// files redirect to, as huggingface.co does. Hooks inject failures.
type fakeHub struct {
	hub, cdn *httptest.Server

	mu       sync.Mutex
	repos    map[string]*fakeRepo
	log      []fakeReq
	cutAfter map[string]int64 // file → abort the next body after N bytes (once)
	hang     bool             // with cutAfter: stall instead of closing the connection
	corrupt  map[string]bool  // file → flip a byte of the body (same length)
	throttle time.Duration    // sleep per 64 KiB served
	fail503  int              // answer the next N API calls with 503
}

type fakeRepo struct {
	commit string
	tags   map[string]string // extra revisions → commit
	files  map[string][]byte
	gated  bool   // 401 without a token, 403 with a wrong one
	token  string // the token that has access when gated
}

type fakeReq struct {
	Server string // "hub" or "cdn"
	Method string
	Path   string
	Range  string
	Auth   string
}

func newFakeHub(t testing.TB) *fakeHub {
	t.Helper()
	h := &fakeHub{repos: map[string]*fakeRepo{}, cutAfter: map[string]int64{}, corrupt: map[string]bool{}}
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(func() { h.hub.Close(); h.cdn.Close() })
	return h
}

// isLFS: weights live in LFS on the Hub; small text files are plain git blobs.
func isLFS(name string) bool {
	return strings.HasSuffix(name, ".safetensors") || strings.HasSuffix(name, ".gguf")
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func gitBlobSHA(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// etagOf is the normalized ETag the real Hub gives a file.
func etagOf(name string, b []byte) string {
	if isLFS(name) {
		return sha256Hex(b)
	}
	return gitBlobSHA(b)
}

func (h *fakeHub) addRepo(id string, r *fakeRepo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.commit == "" {
		r.commit = fmt.Sprintf("%040x", sha1.Sum([]byte(id)))
	}
	h.repos[id] = r
}

// set changes failure hooks under the lock the handlers read them with.
func (h *fakeHub) set(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

func (h *fakeHub) record(server string, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, fakeReq{server, r.Method, r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization")})
}

func (h *fakeHub) requests() []fakeReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]fakeReq(nil), h.log...)
}

// count returns how many logged requests match method and a path suffix.
func (h *fakeHub) count(server, method, suffix string) int {
	n := 0
	for _, r := range h.requests() {
		if r.Server == server && r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func (h *fakeHub) lookup(repo, rev string) (*fakeRepo, string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.repos[repo]
	if !ok {
		return nil, "", false
	}
	switch {
	case rev == "main" || rev == r.commit:
		return r, r.commit, true
	case r.tags[rev] != "":
		return r, r.tags[rev], true
	}
	for _, c := range r.tags {
		if rev == c {
			return r, c, true
		}
	}
	return r, "", true
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	h.record("hub", r)
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		h.serveAPI(w, rest)
		return
	}
	// /{org}/{name}/resolve/{rev}/{file...}
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(parts) != 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	repoID := parts[0] + "/" + parts[1]
	rev, _ := url.PathUnescape(parts[3])
	file, _ := url.PathUnescape(parts[4])
	repo, commit, ok := h.lookup(repoID, rev)
	if !ok {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusUnauthorized)
		return
	}
	if repo.gated {
		switch r.Header.Get("Authorization") {
		case "Bearer " + repo.token:
		case "":
			w.Header().Set("X-Error-Code", "GatedRepo")
			w.Header().Set("X-Error-Message", "Access to model "+repoID+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
			http.Error(w, "gated", http.StatusUnauthorized)
			return
		default:
			w.Header().Set("X-Error-Code", "GatedRepo")
			w.Header().Set("X-Error-Message", "Access to model "+repoID+" is restricted and you are not in the authorized list.")
			http.Error(w, "gated", http.StatusForbidden)
			return
		}
	}
	if commit == "" {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "Invalid rev id", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	data, ok := repo.files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	if isLFS(file) {
		sum := sha256Hex(data)
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		w.Header().Set("ETag", `"`+gitBlobSHA([]byte("lfs pointer "+sum))+`"`) // the pointer's etag, not the file's
		w.Header().Set("Location", h.cdn.URL+"/cdn/"+sum+"?name="+url.QueryEscape(file)+"&sig=signed")
		w.WriteHeader(http.StatusFound)
		return
	}
	etag := `"` + gitBlobSHA(data) + `"`
	if file == "tokenizer_config.json" {
		etag = "W/" + etag // weak form, which huggingface_hub normalizes too
	}
	w.Header().Set("ETag", etag)
	h.serveBytes(w, r, file, data)
}

func (h *fakeHub) serveAPI(w http.ResponseWriter, rest string) {
	h.mu.Lock()
	fail := h.fail503 > 0
	if fail {
		h.fail503--
	}
	h.mu.Unlock()
	if fail {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	// {org}/{name}/revision/{rev}
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) != 4 || parts[2] != "revision" {
		http.NotFound(w, nil)
		return
	}
	rev, _ := url.PathUnescape(parts[3])
	repo, commit, ok := h.lookup(parts[0]+"/"+parts[1], rev)
	if !ok {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusUnauthorized)
		return
	}
	if commit == "" {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	var names []string
	for n := range repo.files {
		names = append(names, n)
	}
	sort.Strings(names)
	sib := make([]map[string]string, 0, len(names))
	for _, n := range append([]string{".gitattributes", "README.md"}, names...) {
		sib = append(sib, map[string]string{"rfilename": n})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": parts[0] + "/" + parts[1], "sha": commit, "siblings": sib})
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.record("cdn", r)
	sum := strings.TrimPrefix(r.URL.Path, "/cdn/")
	name := r.URL.Query().Get("name")
	h.mu.Lock()
	var data []byte
	for _, repo := range h.repos {
		if b, ok := repo.files[name]; ok && sha256Hex(b) == sum {
			data = b
		}
	}
	h.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+sum+`"`)
	h.serveBytes(w, r, name, data)
}

// serveBytes serves data with Range support, applying the failure hooks.
func (h *fakeHub) serveBytes(w http.ResponseWriter, r *http.Request, name string, data []byte) {
	h.mu.Lock()
	cut, hasCut := h.cutAfter[name]
	if hasCut && r.Method == http.MethodGet {
		delete(h.cutAfter, name)
	}
	if h.corrupt[name] {
		data = bytes.Clone(data)
		data[len(data)/2] ^= 0xff
	}
	throttle, hang := h.throttle, h.hang
	h.mu.Unlock()
	var out http.ResponseWriter = w
	if (hasCut && r.Method == http.MethodGet) || throttle > 0 {
		out = &hookWriter{ResponseWriter: w, cut: cut, hasCut: hasCut && r.Method == http.MethodGet, throttle: throttle}
		if hang {
			out.(*hookWriter).hang = r.Context().Done()
		}
	}
	http.ServeContent(out, r, "", time.Time{}, bytes.NewReader(data))
}

// hookWriter drops the connection after cut bytes, and/or slows the body.
type hookWriter struct {
	http.ResponseWriter
	cut      int64
	hasCut   bool
	throttle time.Duration
	hang     <-chan struct{} // wait for the client to give up instead of cutting
	written  int64
}

func (hw *hookWriter) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), 64<<10)]
		if hw.hasCut && hw.written+int64(len(chunk)) >= hw.cut {
			n, _ := hw.ResponseWriter.Write(chunk[:hw.cut-hw.written])
			hw.written += int64(n)
			hw.ResponseWriter.(http.Flusher).Flush()
			if hw.hang != nil {
				<-hw.hang
			}
			panic(http.ErrAbortHandler) // the server closes the connection mid-body
		}
		if hw.throttle > 0 {
			time.Sleep(hw.throttle)
		}
		n, err := hw.ResponseWriter.Write(chunk)
		hw.written += int64(n)
		total += n
		if err != nil {
			return total, err
		}
		p = p[len(chunk):]
	}
	return total, nil
}

// modelsDir finds the shared test models, or skips.
func modelsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("LIGHTLLM_TEST_MODELS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "models")
	}
	if _, err := os.Stat(filepath.Join(dir, "stories260K", "hf", "config.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("test models not found at %s (set LIGHTLLM_TEST_MODELS): %v", dir, err), nil)
	}
	return dir
}

// storiesFiles reads the stories260K HF folder.
func storiesFiles(t testing.TB) map[string][]byte {
	t.Helper()
	dir := filepath.Join(modelsDir(t), "stories260K", "hf")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// splitSafetensors cuts a safetensors file into two valid shards and an
// index, the way transformers' save_pretrained shards a checkpoint.
func splitSafetensors(t testing.TB, b []byte) map[string][]byte {
	t.Helper()
	n := binary.LittleEndian.Uint64(b[:8])
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	data := b[8+n:]
	var names []string
	for k := range hdr {
		if k != "__metadata__" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	shardName := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	out := map[string][]byte{}
	weightMap := map[string]string{}
	for s, group := range [][]string{names[:len(names)/2], names[len(names)/2:]} {
		newHdr := map[string]any{}
		var body []byte
		for _, name := range group {
			var info struct {
				Dtype   string  `json:"dtype"`
				Shape   []int64 `json:"shape"`
				Offsets [2]int  `json:"data_offsets"`
			}
			if err := json.Unmarshal(hdr[name], &info); err != nil {
				t.Fatal(err)
			}
			start := len(body)
			body = append(body, data[info.Offsets[0]:info.Offsets[1]]...)
			newHdr[name] = map[string]any{"dtype": info.Dtype, "shape": info.Shape, "data_offsets": []int{start, len(body)}}
			weightMap[name] = shardName[s]
		}
		hj, _ := json.Marshal(newHdr)
		var buf bytes.Buffer
		_ = binary.Write(&buf, binary.LittleEndian, uint64(len(hj)))
		buf.Write(hj)
		buf.Write(body)
		out[shardName[s]] = buf.Bytes()
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": len(data)}, "weight_map": weightMap})
	out[shardIndex] = idx
	return out
}
