package uitest

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// ChromiumEnv names the browser binary; Debian's chromium by default.
const ChromiumEnv = "GLASSBOX_CHROMIUM"

// ScreenshotsEnv names a directory the browser tests save a picture of
// each page into (docs/ui when refreshing the documentation).
const ScreenshotsEnv = "GLASSBOX_UI_SCREENSHOTS"

// chromium returns the browser's path. Without one the test is skipped, or
// fails when CI=true: CI runs every browser test (make test installs
// chromium with apt-get).
func chromium(t testing.TB) string {
	t.Helper()
	path := os.Getenv(ChromiumEnv)
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found at %s; CI runs every browser test (apt-get install chromium)", path)
		}
		t.Skipf("chromium not found at %s: apt-get install chromium", path)
	}
	return path
}

// Tab is one browser tab of a test, with helpers that fail the test when a
// step fails. It records what the page wrote to the console and every
// exception and browser-log error (CSP violations among them).
type Tab struct {
	t   testing.TB
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

// NewTab starts a headless Chromium with a fresh profile and the flags
// below, and returns its first tab; the browser stops when the test ends.
// Every step must finish within timeout.
func NewTab(t testing.TB, timeout time.Duration) *Tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1440, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	tctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	tab := &Tab{t: t, ctx: tctx}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
		<-done
	})
	// Start the browser now, so a broken install fails here.
	require.NoError(t, chromedp.Do(tctx))
	messages := chromedp.Console(tctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				tab.mu.Lock()
				tab.errors = append(tab.errors, m.String())
				tab.mu.Unlock()
			}
		}
	}()
	return tab
}

// Context is the chromedp context of the tab, for steps the helpers lack.
func (b *Tab) Context() context.Context { return b.ctx }

// Do runs chromedp steps and fails the test on an error.
func (b *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...))
}

// Go opens a URL and waits for the page to load.
func (b *Tab) Go(url string) { b.t.Helper(); b.Do(chromedp.Navigate(url)) }

// WaitVisible waits until an element matching the CSS selector shows.
func (b *Tab) WaitVisible(sel string) { b.t.Helper(); b.Do(chromedp.WaitVisible(chromedp.CSS(sel))) }

// WaitGone waits until no element matches the selector.
func (b *Tab) WaitGone(sel string) { b.t.Helper(); b.Do(chromedp.WaitNotPresent(chromedp.CSS(sel))) }

// Click clicks the first element matching the selector.
func (b *Tab) Click(sel string) { b.t.Helper(); b.Do(chromedp.Click(chromedp.CSS(sel))) }

// ClickAndWait clicks an element that leaves the page (a link, a form's
// submit button) and waits until the next page has loaded.
func (b *Tab) ClickAndWait(sel string) {
	b.t.Helper()
	Eval[bool](b, `(window.__gbOld = true)`)
	b.Click(sel)
	b.WaitFor(`!window.__gbOld && document.readyState === "complete"`)
}

// ClickText clicks the first element matching the selector whose text
// contains text.
func (b *Tab) ClickText(sel, text string) {
	b.t.Helper()
	ok := Eval[bool](b, `(() => { const el = Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).find(e => e.textContent.includes(`+
		strconv.Quote(text)+`)); if (!el) return false; el.click(); return true; })()`)
	require.True(b.t, ok, "no %s with text %q", sel, text)
}

// Type types text into the element matching the selector.
func (b *Tab) Type(sel, text string) { b.t.Helper(); b.Do(chromedp.SendKeys(chromedp.CSS(sel), text)) }

// SetValue sets a form field's value (selects, date inputs).
func (b *Tab) SetValue(sel, value string) {
	b.t.Helper()
	b.Do(chromedp.SetValue(chromedp.CSS(sel), value))
}

// Key presses keys on the focused element or the page.
func (b *Tab) Key(keys string) { b.t.Helper(); b.Do(chromedp.KeyEvent(keys)) }

// Text is the visible text of the first element matching the selector.
func (b *Tab) Text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err)
	return s
}

// Count is the number of elements matching the selector now.
func (b *Tab) Count(sel string) int {
	b.t.Helper()
	return Eval[int](b, "document.querySelectorAll("+strconv.Quote(sel)+").length")
}

// Path is the path of the page the tab shows.
func (b *Tab) Path() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	require.NoError(b.t, err)
	u, err := url.Parse(loc)
	require.NoError(b.t, err)
	return u.Path
}

// URL is the whole address of the page the tab shows.
func (b *Tab) URL() *url.URL {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	require.NoError(b.t, err)
	u, err := url.Parse(loc)
	require.NoError(b.t, err)
	return u
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](b *Tab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err)
	return v
}

// WaitFor polls a JavaScript expression until it is true. A navigation
// while polling (a form being submitted) restarts the poll on the new page.
func (b *Tab) WaitFor(expr string) {
	b.t.Helper()
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[bool](expr))
		if err == nil {
			return
		}
		msg := err.Error()
		navigating := strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "context was destroyed") ||
			strings.Contains(msg, "Cannot find context")
		if b.ctx.Err() != nil || !navigating {
			require.NoError(b.t, err, "waiting for %s", expr)
		}
	}
}

// ConsoleErrors are the errors the pages of this tab reported so far.
func (b *Tab) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Screenshot saves a picture of the page (see the package function).
func (b *Tab) Screenshot(name string) { b.t.Helper(); Screenshot(b.t, b.ctx, name) }

// Screenshot saves a picture of the whole page as <name>.png into the
// directory named by GLASSBOX_UI_SCREENSHOTS, when it is set.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// SignIn signs in through the sign-in page at base and waits until the
// browser has left it.
func (b *Tab) SignIn(base, email, password string) {
	b.t.Helper()
	b.Go(base + "/auth/sign-in")
	b.WaitVisible(`[data-testid=sign-in]`)
	b.Type(`input[name=email]`, email)
	b.Type(`input[name=password]`, password)
	b.Click(`[data-testid=sign-in-submit]`)
	b.WaitFor(`!location.pathname.endsWith("/auth/sign-in") && document.readyState === "complete"`)
}
