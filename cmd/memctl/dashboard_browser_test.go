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
	"strconv"
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
	mustRun(t, dir, "", "context", "add", "--session", "alice", "I'd like a window seat on the Porto flight.")
	mustRun(t, dir, "", "context", "add", "--session", "alice", "--role", "assistant", "Noted: window seat.")
	mustRun(t, dir, "", "import", oldMemories(t, 1)) // one stale memory (carol) for the cleanup
	backupRoot := t.TempDir()
	url, _ := startServe(t, dir, "--sample-every", "200ms", "--backup-root", backupRoot)
	start := time.Now()
	defer func() { t.Logf("browser test took %v", time.Since(start)) }()

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
	if got := text(`#counts .card[data-count="memories"] .n`); got != "5" {
		t.Fatalf("memory count card = %q, want 5", got)
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
	// Each part but the weight factor is on the final score's 0-1 scale: the
	// keyword part too (its raw BM25 score, above 1 here, only in the tooltip).
	for _, p := range []string{"vector", "keyword", "fused", "decay", "final"} {
		got := text(`#score-bars [data-part="` + p + `"]`)
		if v, err := strconv.ParseFloat(got, 64); err != nil || v < 0 || v > 1 {
			t.Errorf("score part %s shows %q, not on the 0-1 scale", p, got)
		}
	}
	tip, err := chromedp.Run(ctx, chromedp.AttributeValue(c(`#score-bars [data-part="keyword"]`), "title"))
	raw, _, _ := strings.Cut(strings.TrimPrefix(tip.Value, "BM25 "), " ")
	if v, perr := strconv.ParseFloat(raw, 64); err != nil || perr != nil || v <= 1 {
		t.Errorf("keyword part's tooltip %q %v: want the raw BM25 score, above 1 for this query", tip.Value, err)
	}
	screenshot(t, ctx, shots, "memory.png")

	// Forget it (two clicks), check through the API, then restore it: the
	// same ID comes back with its text.
	do("forgetting",
		chromedp.Click(c(`#forget`)),
		chromedp.WaitVisible(c(`#forget[data-armed="1"]`)),
		chromedp.Click(c(`#forget`)),
		chromedp.WaitVisible(c(`#restore`)),
	)
	if got := text(`#detail-status`); !strings.Contains(got, "Forgotten.") || !strings.Contains(got, "Restorable until") {
		t.Fatalf("status after forget: %q", got)
	}
	if ids := recallIDs(t, url, "alice", "green tea"); len(ids) > 0 && ids[0] == id {
		t.Fatalf("memory %s still recalled after the page forgot it: %v", id, ids)
	}
	if code := apiGet(t, url, "/v1/memories/"+id, nil); code != 404 {
		t.Fatalf("GET the forgotten memory: %d, want 404", code)
	}
	if n := eval(fmt.Sprintf(`document.querySelectorAll('#results tr[data-id=%q]').length`, id)); n != 0 {
		t.Fatalf("the forgotten memory's row is still listed (%d)", n)
	}
	screenshot(t, ctx, shots, "forgotten.png")
	do("restoring", chromedp.Click(c(`#restore`)), chromedp.WaitVisible(c(`#restored`)))
	var back struct{ ID, Text string }
	if code := apiGet(t, url, "/v1/memories/"+id, &back); code != 200 || back.ID != id || back.Text != "Alice prefers green tea in the morning." {
		t.Fatalf("after restore, GET /v1/memories/%s: %d %+v", id, code, back)
	}
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

	// Tasks and conversations.
	do("tasks view",
		chromedp.Navigate(url+"/#tasks"),
		chromedp.WaitVisible(c(`#tasks tbody tr[data-task="trip"]`)),
		chromedp.Click(c(`#tasks tbody tr[data-task="trip"]`)),
		chromedp.WaitVisible(c(`#task-detail h2`)),
	)
	if got := text(`#task-detail`); !strings.Contains(got, "plan the trip to Porto") {
		t.Fatalf("task detail %q", got)
	}
	do("conversations view",
		chromedp.Navigate(url+"/#conversations"),
		chromedp.WaitReady(c(`#conv-session option[value="alice"]`)),
		chromedp.SetValue(c(`#conv-session`), "alice"),
		chromedp.Click(c(`#conv-form button[type=submit]`)),
		chromedp.WaitVisible(c(`#conversation .turn`)),
	)
	if got := text(`#conversation`); !strings.Contains(got, "window seat on the Porto flight") || !strings.Contains(got, "assistant") {
		t.Fatalf("conversation %q", got)
	}
	screenshot(t, ctx, shots, "conversation.png")

	// The archive: a cleanup dry run and a run, then the trash: a memory
	// forgotten through the API is listed and restored from the page.
	bobIDs := recallIDs(t, url, "bob", "coffee")
	if len(bobIDs) != 1 {
		t.Fatalf("bob's memories: %v", bobIDs)
	}
	var forgot struct{ Forgotten int }
	apiPost(t, url, "/v1/forget", map[string]any{"ids": bobIDs}, &forgot)
	do("archive view and cleanup",
		chromedp.Navigate(url+"/#archive"),
		chromedp.WaitVisible(c(`#forgotten tbody tr[data-id="`+bobIDs[0]+`"]`)),
		chromedp.SetValue(c(`#cleanup-age`), "300d"),
		chromedp.Click(c(`#cleanup-dry`)),
		poll(`document.querySelector('#cleanup-out').textContent.startsWith('would archive 1 memories')`),
		chromedp.Click(c(`#cleanup-run`)),
		chromedp.WaitVisible(c(`#archive tbody tr[data-id="old-00"]`)),
	)
	if got := text(`#forgotten tbody`); !strings.Contains(got, "pour-over coffee") {
		t.Fatalf("trash table %q", got)
	}
	screenshot(t, ctx, shots, "archive.png")
	do("restoring from the trash",
		chromedp.Click(c(`#forgotten button[data-unforget="`+bobIDs[0]+`"]`)),
		poll(`document.querySelector('#trash-out').textContent.startsWith('restored 1 memory')`),
	)
	if ids := recallIDs(t, url, "bob", "coffee"); len(ids) != 1 || ids[0] != bobIDs[0] {
		t.Fatalf("bob's memory after restoring it from the trash: %v, want %v", ids, bobIDs)
	}
	// An archived memory deleted for good (two clicks).
	do("purging an archived memory",
		chromedp.Click(c(`#archive button[data-purge-archived="old-00"]`)),
		chromedp.WaitVisible(c(`#archive button[data-purge-archived="old-00"][data-armed="1"]`)),
		chromedp.Click(c(`#archive button[data-purge-archived="old-00"]`)),
		poll(`document.querySelector('#cleanup-out').textContent === 'deleted old-00 for good'`),
	)
	if n := eval(`document.querySelectorAll('#archive tbody tr').length`); n != 0 {
		t.Fatalf("%d archive rows after the purge", n)
	}

	// Health: counts, a check and a compaction as jobs whose progress (in
	// records) runs to completion, a server-side backup (bytes), an export.
	do("health view",
		chromedp.Navigate(url+"/#health"),
		chromedp.WaitVisible(c(`#store-stats td[data-stat="memories"]`)),
	)
	if got := text(`#store-stats td[data-stat="memories"]`); got != "4" {
		t.Fatalf("health shows %q memories, want 4 (carol's archived, then purged)", got)
	}
	if got := text(`#store-stats td[data-stat="archived"]`); got != "0" {
		t.Fatalf("health shows %q archived, want 0 (purged)", got)
	}
	do("running a check and a compaction from the page",
		chromedp.Click(c(`#do-check`)),
		poll(`document.querySelector('#health-out').textContent.startsWith('check: ok')`),
		chromedp.Click(c(`#do-compact`)),
		poll(`document.querySelector('#health-out').dataset.done === 'compact'`),
		chromedp.WaitVisible(c(`#jobs tbody tr[data-kind="compact"][data-state="done"]`)),
	)
	if got := text(`#health-out`); !strings.HasPrefix(got, "compacted: disk") || !strings.Contains(got, "records") {
		t.Fatalf("compaction result %q", got)
	}
	for _, kind := range []string{"check", "compact"} {
		row := `#jobs tbody tr[data-kind="` + kind + `"][data-state="done"]`
		if v := eval(`Math.round(document.querySelector('` + row + ` progress').value * 100)`); v != 100 {
			t.Fatalf("%s job progress %d%%, want 100", kind, v)
		}
		got := text(row + ` .job-count`)
		var done, total int
		if _, err := fmt.Sscanf(got, "%d / %d records", &done, &total); err != nil || done != total || total < 4 {
			t.Fatalf("%s job count %q (%v): want N / N records", kind, got, err)
		}
	}
	do("a server-side backup and an export from the page",
		chromedp.SetValue(c(`#backup-dir`), "from-the-page"),
		chromedp.Click(c(`#do-backup`)),
		poll(`document.querySelector('#admin-out').dataset.done === 'backup'`),
	)
	if got := text(`#admin-out`); !strings.Contains(got, "backed up into") || !strings.Contains(got, "KiB") {
		t.Fatalf("backup result %q", got)
	}
	if _, err := os.Stat(filepath.Join(backupRoot, "from-the-page", "CURRENT")); err != nil {
		t.Fatalf("the page's backup is not a store: %v", err)
	}
	do("an export from the page",
		chromedp.Click(c(`#do-export`)),
		poll(`document.querySelector('#admin-out').dataset.done === 'export'`),
	)
	if got := text(`#admin-out`); !strings.HasPrefix(got, "exported ") {
		t.Fatalf("export result %q", got)
	}
	// The backup download is a POST (no GET starts a job), which the page sends.
	do("a backup download from the page",
		chromedp.Click(c(`#do-backup-download`)),
		poll(`document.querySelector('#admin-out').dataset.done === 'backup.tar'`),
	)
	if got := text(`#admin-out`); !strings.HasPrefix(got, "downloaded a backup of ") || strings.HasPrefix(got, "downloaded a backup of 0 B") {
		t.Fatalf("backup download result %q", got)
	}
	importFile := filepath.Join(t.TempDir(), "import.jsonl")
	when := time.Now().UTC().Format(time.RFC3339Nano)
	line := fmt.Sprintf(`{"id":"imported-1","session":"dave","text":"Dave uploaded this through the page.","importance":0.5,"created":%q,"updated":%q}`+"\n", when, when)
	if err := os.WriteFile(importFile, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	do("an import upload from the page",
		chromedp.SetUploadFiles(c(`#import-file`), []string{importFile}),
		chromedp.Click(c(`#do-import`)),
		poll(`document.querySelector('#admin-out').dataset.done === 'import'`),
	)
	var imported struct{ ID, Session, Text string }
	if code := apiGet(t, url, "/v1/memories/imported-1", &imported); code != 200 || imported.Session != "dave" {
		t.Fatalf("the uploaded memory: %d %+v", code, imported)
	}
	screenshot(t, ctx, shots, "health.png")

	// Plots: the series samples every 200ms; after recalls both plots have points.
	for range 3 {
		recallIDs(t, url, "alice", "porto flight")
	}
	time.Sleep(500 * time.Millisecond)
	do("plots",
		chromedp.Navigate(url+"/#overview"),
		chromedp.WaitVisible(c(`#plot-growth svg polyline`)),
		chromedp.WaitVisible(c(`#plot-latency svg polyline`)),
	)
	// Few points are marked with a circle each (the latency plot: only the
	// intervals with recalls); many make a line.
	if n := eval(`document.querySelectorAll('#plot-latency svg circle').length`); n < 1 {
		t.Fatalf("latency plot has %d points", n)
	}
	if n := eval(`document.querySelector('#plot-growth svg polyline').getAttribute('points').split(' ').length`); n < 2 {
		t.Fatalf("growth line has %d points", n)
	}
	screenshot(t, ctx, shots, "plots.png")

	// A read-only key: the admin controls are disabled, with the reason shown.
	roDir := filepath.Join(t.TempDir(), "ro")
	keys := filepath.Join(t.TempDir(), "keys.json")
	mustRun(t, roDir, "", "remember", "--session", "alice", "Alice reads only.")
	roKey := strings.TrimSpace(mustRun(t, roDir, "", "keys", "add", "reader", "--keys", keys, "--sessions", "*", "--rights", "read"))
	roURL, _ := startServe(t, roDir, "--keys", keys)
	do("a read-only key",
		chromedp.Navigate(roURL+"/#health"),
		chromedp.WaitVisible(c(`#banner`)),
		chromedp.SetValue(c(`#key`), roKey),
		chromedp.Click(c(`#key-form button[type=submit]`)),
		poll(`document.querySelector('#banner').textContent.includes('Not allowed with this key')`),
		chromedp.WaitVisible(c(`#admin-note`)),
	)
	if got := text(`#admin-note`); !strings.Contains(got, "admin right") {
		t.Fatalf("admin note %q", got)
	}
	if got := text(`#banner`); !strings.Contains(got, "Not allowed with this key") {
		t.Fatalf("banner %q", got)
	}
	for _, b := range []string{"do-check", "do-compact", "do-flush", "do-backup", "do-export", "do-import", "do-reembed"} {
		if n := eval(`document.getElementById('` + b + `').disabled ? 1 : 0`); n != 1 {
			t.Fatalf("#%s is enabled for a read-only key", b)
		}
	}
	screenshot(t, ctx, shots, "read-only.png")
	do("the read-only key browses",
		chromedp.Navigate(roURL+"/#memories"),
		chromedp.WaitReady(c(`#search-session option[value="alice"]`)),
		chromedp.Click(c(`#search-go`)),
		chromedp.WaitVisible(c(`#results tbody tr`)),
	)
}

// poll waits (up to 20s) until the JavaScript expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
		return chromedp.Void{}, err
	})
}

// apiGet GETs path from the served API into out (when not nil) and returns the status.
func apiGet(t *testing.T, url, path string, out any) int {
	t.Helper()
	resp, err := http.Get(url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
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
