package webui

import (
	"regexp"
	"strings"
	"testing"
)

// The pages must stay small: they load on a phone over a slow link.
const maxTotalBytes = 200 << 10

func TestAssetsSmall(t *testing.T) {
	total := 0
	for _, n := range Names() {
		total += len(Asset(n).Body)
	}
	if total == 0 || total >= maxTotalBytes {
		t.Fatalf("assets total %d bytes, want 0 < total < %d", total, maxTotalBytes)
	}
	t.Logf("%d assets, %d bytes", len(Names()), total)
}

// TestPagesReferenceOnlyOwnAssets: every script and stylesheet a page
// names is embedded, and nothing loads from another origin.
func TestPagesReferenceOnlyOwnAssets(t *testing.T) {
	ref := regexp.MustCompile(`(?:src|href)="([^"]*)"`)
	for _, page := range []string{"index.html", "dashboard.html"} {
		body := string(Asset(page).Body)
		for _, m := range ref.FindAllStringSubmatch(body, -1) {
			u := m[1]
			switch {
			case u == "data:," || u == "/" || u == "/dashboard":
			case strings.HasPrefix(u, "/ui/"):
				if !contains(Names(), strings.TrimPrefix(u, "/ui/")) {
					t.Errorf("%s references %s, which is not embedded", page, u)
				}
			default:
				t.Errorf("%s references %q: pages load only their own assets", page, u)
			}
		}
	}
}

// TestNoHTMLSinks keeps model text out of the HTML parser: the scripts
// build the DOM with text nodes only.
func TestNoHTMLSinks(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|DOMParser|createContextualFragment`)
	for _, n := range Names() {
		if !strings.HasSuffix(n, ".js") {
			continue
		}
		if m := sinks.FindString(string(Asset(n).Body)); m != "" {
			t.Errorf("%s uses %s", n, m)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
