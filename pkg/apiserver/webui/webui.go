// Package webui holds the built-in web pages, embedded in the binary: the
// chat playground (index.html) and the live status page (dashboard.html),
// with their shared style and scripts. Plain HTML, CSS and JavaScript
// written for this project — no build step, no third-party code. The pages
// only talk to the server's own HTTP API; model text reaches the DOM as
// text nodes only (see markdown.js).
package webui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"sort"
)

//go:embed static
var static embed.FS

// File is one embedded asset.
type File struct {
	Name        string
	ContentType string
	ETag        string // quoted, from the content's hash
	Body        []byte
}

// files is built once from the embedded tree, which cannot change.
func files() map[string]*File {
	out := map[string]*File{}
	ents, err := fs.ReadDir(static, "static")
	if err != nil {
		panic("webui: embedded assets unreadable: " + err.Error()) // the embed directive guarantees the directory
	}
	for _, e := range ents {
		b, err := static.ReadFile(path.Join("static", e.Name()))
		if err != nil {
			panic("webui: embedded asset unreadable: " + err.Error())
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(e.Name()))
		if ct == "" {
			ct = "application/octet-stream"
		}
		out[e.Name()] = &File{Name: e.Name(), ContentType: ct, ETag: `"` + hex.EncodeToString(sum[:8]) + `"`, Body: b}
	}
	return out
}

// Asset returns the named file; it panics on a name that is not embedded
// (a programming error: the names are fixed at build time).
func Asset(name string) *File {
	f := files()[name]
	if f == nil {
		panic("webui: no embedded asset " + name)
	}
	return f
}

// Names lists the embedded files, sorted.
func Names() []string {
	m := files()
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
