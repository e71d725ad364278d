package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// envChromium names the browser binary; default: chromium on $PATH
// (Debian's package, which scripts/install-test-deps.sh installs).
const envChromium = "LIGHTLLM_CHROMIUM"

// envScreenshots, set to a directory (docs/ to refresh the README's
// pictures), keeps the test's screenshots there.
const envScreenshots = "LIGHTLLM_SCREENSHOTS"

// chromiumPath finds the browser or skips; in CI (CI=true) a missing
// browser fails the test instead, so it can never pass by not running.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on $PATH (install it with scripts/install-test-deps.sh, or set " + envChromium + ")"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser is one headless Chromium with one tab, recording every console
// error, uncaught exception and failed load of the pages.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	bad  []string
	done chan struct{} // closed when the console reader has returned
}

func newBrowser(t *testing.T, exe string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	b := &browser{ctx: ctx, done: make(chan struct{})}
	// The first Do starts the browser, bound to ctx (no deadline): later
	// calls get their own timeouts.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("start %s: %v", exe, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		defer close(b.done)
		for m, err := range msgs {
			if err != nil {
				return // the tab is gone
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				b.mu.Lock()
				b.bad = append(b.bad, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancelTab(); cancelAlloc(); <-b.done })
	return b
}

func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bad...)
}

// do runs actions with a deadline, failing the test on error.
func (b *browser) do(t *testing.T, what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one action that returns a value.
func get[T any](t *testing.T, b *browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// enter presses Enter as a keyboard does: keydown and keyup, with the
// text insertion left to the page's handler (chromedp's SendKeys would
// also send a char event, which inserts a line even after the page's
// keydown handler cancelled it).
var enter = chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
	for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: "Enter", Code: "Enter",
			WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}); err != nil {
			return err
		}
	}
	return nil
})

func eval(js string) chromedp.Action[chromedp.Void] { return chromedp.Evaluate[chromedp.Void](js) }

// webStatus is the part of GET /dashboard/status the test reads.
type webStatus struct {
	Load *struct {
		Running int64 `json:"running"`
		Waiting int64 `json:"waiting"`
	} `json:"load"`
	InFlight int `json:"in_flight"`
	Traffic  struct {
		Admitted  int64 `json:"requests_admitted"`
		Cancelled int64 `json:"requests_cancelled"`
	} `json:"traffic"`
}

// setSettings fills the chat page's settings fields as a user would
// (value, then a change event).
func setSettings(vals map[string]string) chromedp.Action[chromedp.Void] {
	b, _ := json.Marshal(vals)
	return eval(`(() => { document.getElementById('settings').open = true;
		for (const [k, v] of Object.entries(` + string(b) + `)) { const e = document.getElementById(k); e.value = v;
		e.dispatchEvent(new Event('change')); } })()`)
}

// recordAnswer watches the streaming answer: every text the last
// assistant message shows is kept in window.__seen; with stopAt > 0 the
// Stop button is clicked once the text is that long (from inside the page,
// so the click lands while tokens still arrive).
func recordAnswer(stopAt int) chromedp.Action[chromedp.Void] {
	return eval(fmt.Sprintf(`(() => { window.__seen = []; window.__stopped = false;
		const box = document.getElementById('messages');
		new MutationObserver(() => {
			const m = box.querySelector('.msg.assistant:last-child .body');
			if (!m) return;
			const t = m.textContent;
			if (window.__seen[window.__seen.length - 1] !== t) window.__seen.push(t);
			if (%d > 0 && !window.__stopped && t.length >= %d) { window.__stopped = true; document.getElementById('stop-btn').click(); }
		}).observe(box, { childList: true, subtree: true, characterData: true }); })()`, stopAt, stopAt))
}

// storedAnswer is the page's record of its last answer (localStorage).
type storedAnswer struct {
	Content string `json:"content"`
	State   string `json:"state"`
}

func lastAnswer(t *testing.T, b *browser) storedAnswer {
	t.Helper()
	return get(t, b, "read the stored answer", chromedp.Evaluate[storedAnswer](`(() => {
		const c = JSON.parse(localStorage.getItem('lightllm.chats')).find((c) => c.id === localStorage.getItem('lightllm.current'));
		return c.messages[c.messages.length - 1]; })()`))
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv(envScreenshots)
	if dir == "" {
		dir = t.TempDir()
	}
	png := get(t, b, "screenshot "+name, chromedp.CaptureScreenshot())
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// textOf reads the text of the first node sel selects in one evaluation:
// the status page redraws its table every second, so a node looked up by
// id may be gone by the time it is read.
func textOf(sel string) chromedp.Action[string] {
	q, _ := json.Marshal(sel)
	return chromedp.Evaluate[string](`((n) => n ? n.textContent : '')(document.querySelector(` + string(q) + `))`)
}

// waitText polls until the text of the node sel selects is want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for {
			got, err := textOf(sel)(ctx, tg)
			if err != nil {
				return err
			}
			if strings.TrimSpace(got) == want {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s shows %q, want %q: %w", sel, got, want, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// askPage types prompt into the chat page with the given settings, presses
// Enter and waits for the answer to end in state want ("done" or, with
// stopAt > 0, "stopped"). It returns what the page stored and every text
// the answer showed while it streamed.
func askPage(t *testing.T, b *browser, prompt string, settings map[string]string, stopAt int, want string) (storedAnswer, []string) {
	t.Helper()
	b.do(t, "send", 60*time.Second, chromedp.Click(chromedp.ID("new")), setSettings(settings), recordAnswer(stopAt),
		chromedp.SendKeys(chromedp.ID("input"), prompt), enter,
		chromedp.WaitVisible(chromedp.CSS(`.msg.assistant[data-state="`+want+`"]`)))
	return lastAnswer(t, b), get(t, b, "read what streamed", chromedp.Evaluate[[]string](`window.__seen`))
}

// apiChat is the same request through the API, not streamed.
func pageAPIChat(t *testing.T, c *apiClient, prompt string, maxTokens int) string {
	t.Helper()
	var api struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	c.postJSON(t, "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": prompt}},
		"temperature": 0, "max_tokens": maxTokens}, &api)
	if len(api.Choices) != 1 {
		t.Fatalf("API answered %d choices", len(api.Choices))
	}
	return api.Choices[0].Message.Content
}

// pageAPICompletion is the same request through /v1/completions, the
// endpoint the page uses for a model without a chat template.
func pageAPICompletion(t *testing.T, c *apiClient, prompt string, maxTokens int) string {
	t.Helper()
	var api struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	c.postJSON(t, "/v1/completions", map[string]any{"prompt": prompt, "temperature": 0, "max_tokens": maxTokens}, &api)
	if len(api.Choices) != 1 {
		t.Fatalf("API answered %d choices", len(api.Choices))
	}
	return api.Choices[0].Text
}

// partialSteps checks that every streamed state is a prefix of the final
// rendering and counts the states before it.
func partialSteps(t *testing.T, b *browser, seen []string) int {
	t.Helper()
	rendered := get(t, b, "read the answer", chromedp.TextContent(chromedp.CSS(`.msg.assistant:last-child .body`)))
	grew := 0
	for i, txt := range seen {
		if !strings.HasPrefix(rendered, txt) {
			t.Fatalf("streamed state %d is not a prefix of the final text:\n%q\n%q", i, txt, rendered)
		}
		if txt != "" && txt != rendered {
			grew++
		}
	}
	return grew
}

// TestWebPages is issue 23's browser test: the chat page streams the
// model's greedy answer token by token and matches the API, Stop frees the
// request on the server, and the status page shows a kill -9 of the
// detokenizer as a restart. No console error may appear meanwhile.
//
// Two servers: stories260K for the real greedy text, and the synthetic
// backend at 40 ms a token, slow enough that every token is a separate
// network chunk and Stop lands mid-answer (stories260K writes ~1000 tokens/s,
// which a busy machine's browser may read in one go).
func TestWebPages(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	exe := chromiumPath(t)
	models := modelsDir(t)
	bin := buildBinaries(t)
	tmpl := filepath.Join(t.TempDir(), "chat.jinja")
	if err := os.WriteFile(tmpl, []byte(chatTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(models, "stories260K", "hf")
	s := launch(t, bin, hf, "--chat_template", tmpl)
	const key = "page-test-key"
	// No chat template here: the page must fall back to /v1/completions.
	slow := launch(t, bin, hf, "--backend", "synthetic", "--synthetic_step_ms", "40", "--api_key", key)
	c, cSlow := newAPIClient(t, s.base), newAPIClient(t, slow.base)
	cSlow.header = map[string]string{"Authorization": "Bearer " + key}
	b := newBrowser(t, exe)
	status := func(c *apiClient) webStatus {
		var st webStatus
		a := c.do(t, "GET", "/dashboard/status", nil)
		apiJSON(t, string(a.body), &st)
		return st
	}
	box := chromedp.ID("input")
	const prompt = "Once upon a time"

	b.do(t, "open the chat page", 20*time.Second, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(box),
		chromedp.WaitVisible(chromedp.CSS(`#health.ok`)))

	t.Run("greedy answer matches the API", func(t *testing.T) {
		got, seen := askPage(t, b, prompt, map[string]string{"temperature": "0", "max_tokens": "400"}, 0, "done")
		if want := pageAPIChat(t, c, prompt, 400); got.Content != want || want == "" {
			t.Fatalf("page answer (%s) differs from the API's greedy text:\npage: %q\napi:  %q", got.State, got.Content, want)
		}
		t.Logf("%d chars, shown in %d partial steps", len(got.Content), partialSteps(t, b, seen))
		b.do(t, "tidy for the picture", 5*time.Second, eval(`document.getElementById('settings').open = false;
			document.getElementById('messages').scrollTop = 0`))
		b.screenshot(t, "chat.png")
	})

	t.Run("streams token by token", func(t *testing.T) {
		const n = 32
		// This server has --api_key: the page asks for it before anything else.
		b.do(t, "open the slow server's chat and give the key", 20*time.Second, chromedp.Navigate(slow.base+"/"),
			chromedp.WaitVisible(chromedp.CSS(`#keydlg input`)), chromedp.SendKeys(chromedp.CSS(`#keydlg input`), key), enter,
			chromedp.WaitVisible(chromedp.CSS(`#health.ok`)))
		if mode := get(t, b, "endpoint", chromedp.Text(chromedp.ID("mode"))); !strings.Contains(mode, "/v1/completions") {
			t.Fatalf("without a chat template the page should use /v1/completions, it says %q", mode)
		}
		got, seen := askPage(t, b, prompt, map[string]string{"temperature": "0", "max_tokens": fmt.Sprint(n)}, 0, "done")
		if want := pageAPICompletion(t, cSlow, prompt, n); got.Content != want || want == "" {
			t.Fatalf("page answer (%s) differs from the API's:\npage: %q\napi:  %q", got.State, got.Content, want)
		}
		// One token per 40 ms step, each its own chunk: the text must grow
		// in about as many steps as there are tokens (a quarter of them
		// leaves room for a browser starved on a busy machine, which reads
		// several chunks at once).
		grew := partialSteps(t, b, seen)
		if grew < n/4 {
			t.Fatalf("the answer grew in %d steps for %d tokens, want it streamed token by token", grew, n)
		}
		t.Logf("%d tokens shown in %d partial steps", n, grew)
	})

	t.Run("stop frees the request", func(t *testing.T) {
		before := status(cSlow)
		got, _ := askPage(t, b, prompt, map[string]string{"temperature": "0", "max_tokens": "400"}, 40, "stopped")
		deadline := time.Now().Add(15 * time.Second)
		var st webStatus
		for {
			st = status(cSlow)
			if st.Load != nil && st.Load.Running == 0 && st.Load.Waiting == 0 && st.InFlight == 0 && st.Traffic.Cancelled > before.Traffic.Cancelled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after Stop the server still runs the request: %+v (load %+v); before: %+v", st, st.Load, before)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// 80 of the 400 tokens are enough to show the answer was cut short.
		if head := pageAPICompletion(t, cSlow, prompt, 80); len(got.Content) < 40 || len(got.Content) >= len(head) || !strings.HasPrefix(head, got.Content) {
			t.Fatalf("stopped answer (%d chars) should be a prefix of the first 80 tokens (%d chars): %q", len(got.Content), len(head), got.Content)
		}
		t.Logf("stopped after %d characters; cancelled requests %d → %d", len(got.Content), before.Traffic.Cancelled, st.Traffic.Cancelled)
	})

	t.Run("restart button with the API key", func(t *testing.T) {
		row := `tr[data-role="router"]`
		old := rolePids(slow.status())["router"]
		b.do(t, "restart the router from the page", 40*time.Second, chromedp.Navigate(slow.base+"/dashboard"),
			chromedp.WaitVisible(chromedp.CSS(row+` .badge.ok`)), chromedp.WaitEnabled(chromedp.CSS(row+` button`)),
			chromedp.Click(chromedp.CSS(row+` button`)), waitText(row+` td.restarts`, "1"), waitText(row+` td.state`, "ready"))
		if pid := rolePids(slow.status())["router"]; pid == old || pid == 0 {
			t.Fatalf("router pid %d → %d: not restarted", old, pid)
		}
	})

	b.do(t, "back to the first server", 20*time.Second, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(box))
	t.Run("keyboard and safe rendering", func(t *testing.T) {
		b.do(t, "shift+enter", 10*time.Second, chromedp.SendKeys(box, "line one"),
			chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)), chromedp.SendKeys(box, "line two"))
		val := get(t, b, "read the input", chromedp.Value(box))
		b.do(t, "clear", 5*time.Second, eval(`document.getElementById('input').value = ''`))
		if val != "line one\nline two" {
			t.Errorf("Shift+Enter should add a line to the message, got %q", val)
		}
		type rendering struct {
			Imgs, Scripts, Strong int
			Text                  string
		}
		r := get(t, b, "render hostile markdown", chromedp.Evaluate[rendering](`(() => { const d = document.createElement('div');
			d.append(LLmd.render('<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> **bold** `+"`<b>`"+`'));
			return { Imgs: d.querySelectorAll('img').length, Scripts: d.querySelectorAll('script').length,
				Strong: d.querySelectorAll('strong').length, Text: d.textContent }; })()`))
		if r.Imgs != 0 || r.Scripts != 0 || r.Strong != 1 || !strings.Contains(r.Text, `<img src=x onerror="window.__pwned=1">`) ||
			!strings.Contains(r.Text, "<b>") {
			t.Errorf("markdown rendering let HTML through or lost text: %+v", r)
		}
	})

	t.Run("status page shows a restart", func(t *testing.T) {
		row := `tr[data-role="detokenizer"]`
		b.do(t, "open the status page", 20*time.Second, chromedp.Navigate(s.base+"/dashboard"),
			chromedp.WaitVisible(chromedp.CSS(row+` .badge.ok`)), waitText("#running", "0"))
		restarts := get(t, b, "restart count", textOf(row+` td.restarts`))
		old := s.kill9("detokenizer")
		want := fmt.Sprint(atoiOr(restarts, 0) + 1)
		b.do(t, "see the restart", 30*time.Second, waitText(row+` td.restarts`, want), waitText(row+` td.state`, "ready"))
		b.do(t, "tall window", 5*time.Second, chromedp.EmulateViewport(1280, 1280), chromedp.Sleep(1200*time.Millisecond))
		b.screenshot(t, "dashboard.png")
		if pid := get(t, b, "new pid", textOf(row+` td.pid`)); pid == fmt.Sprint(old) {
			t.Errorf("status page still shows the killed pid %s", pid)
		}
	})

	t.Run("phone width", func(t *testing.T) {
		for page, shot := range map[string]string{"/": "phone-chat.png", "/dashboard": "phone-dashboard.png"} {
			b.do(t, "narrow "+page, 20*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.base+page),
				chromedp.WaitVisible(chromedp.CSS("header.top")), chromedp.Sleep(300*time.Millisecond))
			if get(t, b, "overflow", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
				t.Errorf("%s scrolls sideways at phone width", page)
			}
			b.screenshot(t, shot)
		}
	})

	t.Run("dark color scheme", func(t *testing.T) {
		dark := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
			return err
		})
		b.do(t, "dark status page", 20*time.Second, dark, chromedp.Navigate(s.base+"/dashboard"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-role="infer"]`)))
		// The body's background, as "rgb(r, g, b)": dark means a low sum.
		bg := get(t, b, "background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		var r, g, bl int
		if _, err := fmt.Sscanf(bg, "rgb(%d, %d, %d)", &r, &g, &bl); err != nil || r+g+bl > 3*80 {
			t.Errorf("with prefers-color-scheme: dark the page background is %q", bg)
		}
		b.screenshot(t, "dark-dashboard.png")
	})

	if bad := b.errors(); len(bad) > 0 {
		t.Fatalf("the browser reported %d errors:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

func atoiOr(s string, d int) int {
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(s), &n); err != nil {
		return d
	}
	return n
}
