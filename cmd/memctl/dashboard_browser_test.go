package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium (installed by scripts/setup.sh),
// or $ENGRAM_CHROMIUM. Without one the browser tests skip, except under
// CI=true, where they fail: CI must drive the real browser.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ENGRAM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found; CI needs it for the dashboard test (scripts/setup.sh installs it with apt-get)")
	}
	t.Skip("chromium not found (apt-get install chromium, as scripts/setup.sh does, or set ENGRAM_CHROMIUM); skipping the dashboard browser test")
	return ""
}

// artifactDir is where the browser tests keep their screenshots:
// $ENGRAM_ARTIFACTS, or .cache/artifacts/dashboard in the repository
// (ignored by git).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ENGRAM_ARTIFACTS")
	if dir == "" {
		wd, _ := os.Getwd()
		dir = filepath.Join(wd, "..", "..", ".cache", "artifacts", "dashboard")
	}
	dir, _ = filepath.Abs(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser starts a headless Chromium with a fresh profile and returns a
// chromedp context for one tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // the tests may run as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// apiPost calls the served API (as a script would) to check what the page did.
func apiPost(t *testing.T, url, path string, body, out any) {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// recallIDs recalls query in session without touching access statistics.
func recallIDs(t *testing.T, url, session, query string) []string {
	t.Helper()
	var d struct{ Results []struct{ ID, Text string } }
	apiPost(t, url, "/v1/recall", map[string]any{"query": query, "session": session, "no_touch": true}, &d)
	var ids []string
	for _, r := range d.Results {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestDashboardInBrowser drives the dashboard `memctl serve` serves through
// a real headless Chromium: open it, search a session, open a memory,
// forget it, restore it; stored markup must show as text.
func TestDashboardInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser test runs in the full suite, not with -short")
	}
	isolate(t)
	ctx := browser(t)
	shots := artifactDir(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "alice", "--source", "chat", "--tag", "drinks", "Alice prefers green tea in the morning.")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice's flight to Porto leaves on Friday at 7:40.")
	const markup = `Alice wrote <img src=x onerror="document.title='pwned'"> <b>bold</b> in her notes`
	mustRun(t, dir, "", "remember", "--session", "alice", markup)
	mustRun(t, dir, "", "remember", "--session", "bob", "Bob drinks pour-over coffee, never instant.")
	mustRun(t, dir, "", "tasks", "start", "trip", "--goal", "plan the trip to Porto")
	url, _ := startServe(t, dir)

	c := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(c(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	eval := func(js string) int {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return v
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	do("opening the dashboard",
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(c(`#sessions tbody tr[data-session="alice"]`)),
		chromedp.WaitVisible(c(`#counts .card[data-count="memories"]`)),
	)
	if got := text(`#sessions tbody`); !strings.Contains(got, "alice") || !strings.Contains(got, "bob") {
		t.Fatalf("sessions table: %q", got)
	}
	if got := text(`#counts .card[data-count="memories"] .n`); got != "4" {
		t.Fatalf("memory count card = %q, want 4", got)
	}
	screenshot(t, ctx, shots, "overview.png")

	// Search alice's memories: clicking the session opens the memories view.
	do("searching",
		chromedp.Click(c(`#sessions tbody tr[data-session="alice"]`)),
		chromedp.WaitVisible(c(`#view-memories`)),
		chromedp.WaitVisible(c(`#results tbody tr`)),
		chromedp.SetValue(c(`#search-query`), "green tea"),
		chromedp.Click(c(`#search-go`)),
		chromedp.WaitVisible(c(`#results tbody tr td.score:not(:empty)`)),
	)
	if got := text(`#results tbody tr:first-child`); !strings.Contains(got, "green tea") {
		t.Fatalf("first result %q, want the green tea memory", got)
	}
	if n := eval(`document.querySelectorAll('#results tbody tr:not([data-id])').length`); n != 0 {
		t.Fatalf("%d result rows without their memory id", n)
	}
	screenshot(t, ctx, shots, "search.png")

	// Open it: text, the score parts, the metadata.
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(c(`#results tbody tr:first-child`), "data-id"))
	if err != nil || attr.Value == "" {
		t.Fatalf("first row's id: %+v %v", attr, err)
	}
	id := attr.Value
	do("opening a memory", chromedp.Click(c(`#results tbody tr:first-child`)), chromedp.WaitVisible(c(`#detail-text`)))
	if got := text(`#detail-text`); got != "Alice prefers green tea in the morning." {
		t.Fatalf("detail text %q", got)
	}
	parts := text(`#score-bars`)
	for _, p := range []string{"vector", "keyword", "fused", "decay", "weight", "final"} {
		if !strings.Contains(parts, p) {
			t.Fatalf("score explanation %q lacks %s", parts, p)
		}
	}
	screenshot(t, ctx, shots, "memory.png")

	// Forget it (two clicks), check through the API, then restore it.
	do("forgetting",
		chromedp.Click(c(`#forget`)),
		chromedp.WaitVisible(c(`#forget[data-armed="1"]`)),
		chromedp.Click(c(`#forget`)),
		chromedp.WaitVisible(c(`#restore`)),
	)
	if got := text(`#detail-status`); !strings.Contains(got, "Forgotten.") {
		t.Fatalf("status after forget: %q", got)
	}
	if ids := recallIDs(t, url, "alice", "green tea"); len(ids) > 0 && ids[0] == id {
		t.Fatalf("memory %s still recalled after the page forgot it: %v", id, ids)
	}
	if n := eval(fmt.Sprintf(`document.querySelectorAll('#results tr[data-id=%q]').length`, id)); n != 0 {
		t.Fatalf("the forgotten memory's row is still listed (%d)", n)
	}
	screenshot(t, ctx, shots, "forgotten.png")
	do("restoring", chromedp.Click(c(`#restore`)), chromedp.WaitVisible(c(`#restored`)))
	if ids := recallIDs(t, url, "alice", "green tea"); len(ids) == 0 || ids[0] != id {
		t.Fatalf("after restore, recall gives %v, want %s first", ids, id)
	}
	screenshot(t, ctx, shots, "restored.png")

	// Stored markup stays text: search for it and open it.
	do("opening the markup memory",
		chromedp.SetValue(c(`#search-query`), "notes bold"),
		chromedp.Click(c(`#search-go`)),
		chromedp.WaitVisible(c(`#results tbody tr td.score:not(:empty)`)),
		chromedp.Click(c(`#results tbody tr:first-child`)),
		chromedp.WaitVisible(c(`#detail-text`)),
	)
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if got := text(`#detail-text`); got != markup || title == "pwned" {
		t.Fatalf("stored markup was interpreted: text %q, title %q", got, title)
	}
	if n := eval(`document.querySelectorAll('main img, main b').length`); n != 0 {
		t.Fatalf("stored markup became %d elements", n)
	}

	// Tasks, the archive and health render from the API too.
	do("tasks and health views",
		chromedp.Navigate(url+"/#tasks"),
		chromedp.WaitVisible(c(`#tasks tbody tr[data-task="trip"]`)),
		chromedp.Navigate(url+"/#health"),
		chromedp.WaitVisible(c(`#store-stats td[data-stat="memories"]`)),
	)
	if got := text(`#store-stats td[data-stat="memories"]`); got != "4" {
		t.Fatalf("health shows %q memories, want 4", got)
	}
	do("running a check from the page",
		chromedp.Click(c(`#do-check`)),
		chromedp.WaitVisible(c(`#jobs tbody tr`)),
		chromedp.Steps(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`document.querySelector('#health-out').textContent.startsWith('check: ok')`, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
			return chromedp.Void{}, err
		}),
	)
	screenshot(t, ctx, shots, "health.png")
}

// TestDashboardScreenshot writes the README's screenshot of the dashboard
// to $ENGRAM_DASHBOARD_SHOT (skipped without it):
//
//	ENGRAM_DASHBOARD_SHOT=/tmp/dash.png go test ./cmd/memctl -run TestDashboardScreenshot
func TestDashboardScreenshot(t *testing.T) {
	out := os.Getenv("ENGRAM_DASHBOARD_SHOT")
	if out == "" {
		t.Skip("set ENGRAM_DASHBOARD_SHOT=FILE.png to write the README's screenshot")
	}
	isolate(t)
	ctx := browser(t)
	dir := filepath.Join(t.TempDir(), "store")
	for _, m := range []struct{ session, source, tag, text string }{
		{"alice", "chat", "drinks", "Alice prefers green tea in the morning, never coffee."},
		{"alice", "chat", "travel", "Alice's flight to Porto leaves on Friday at 7:40 from gate B12."},
		{"alice", "chat", "health", "Alice is allergic to peanuts and carries an EpiPen."},
		{"alice", "email", "work", "Alice leads the Q3 launch review with the design team on Tuesdays."},
		{"alice", "chat", "drinks", "Alice likes her tea with a slice of lemon, no sugar."},
		{"bob", "chat", "drinks", "Bob drinks pour-over coffee and grinds the beans himself."},
		{"bob", "chat", "work", "Bob is on call for the payments service this week."},
		{"handbook", "doc:handbook.md", "policy", "Expense reports are due by the fifth working day of the month."},
		{"handbook", "doc:handbook.md", "policy", "Remote days need a note in the team calendar the week before."},
	} {
		mustRun(t, dir, "", "remember", "--session", m.session, "--source", m.source, "--tag", m.tag, m.text)
	}
	url, _ := startServe(t, dir)
	c := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	err := chromedp.Do(ctx,
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(c(`#sessions tbody tr[data-session="alice"]`)),
		chromedp.Click(c(`#sessions tbody tr[data-session="alice"]`)),
		chromedp.WaitVisible(c(`#results tbody tr`)),
		chromedp.SetValue(c(`#search-query`), "what tea does alice drink"),
		chromedp.Click(c(`#search-go`)),
		chromedp.WaitVisible(c(`#results tbody tr td.score:not(:empty)`)),
		chromedp.Click(c(`#results tbody tr:first-child`)),
		chromedp.WaitVisible(c(`#score-bars`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	small, err := paletted(shot, 128)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, small, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes, %d before the palette)", out, len(small), len(shot))
}

// paletted re-encodes a screenshot with its n most frequent colours (each
// pixel takes the nearest), which keeps a page of flat colours and text
// legible at a fraction of the size.
func paletted(data []byte, n int) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	freq := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			freq[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	cs := make([]color.RGBA, 0, len(freq))
	for c := range freq {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b color.RGBA) int { return freq[b] - freq[a] })
	pal := make(color.Palette, 0, n)
	for _, c := range cs[:min(n, len(cs))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
