package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// syncBuffer is a bytes.Buffer safe for a goroutine writing while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs `memctl serve` in-process on dir (on a free port) and
// returns its URL, read from the LOCK file the way memctl commands find it,
// and a stop function (also run at cleanup).
func startServe(t *testing.T, dir string, extra ...string) (string, func()) {
	t.Helper()
	url, _, stop := startServeLogged(t, dir, extra...)
	return url, stop
}

// startServeLogged is startServe that also returns the server's log.
func startServeLogged(t *testing.T, dir string, extra ...string) (string, *syncBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	logs := new(syncBuffer)
	args := append([]string{"--dir", dir, "serve", "--addr", "127.0.0.1:0"}, extra...)
	go func() { done <- run(ctx, args, strings.NewReader(""), io.Discard, logs) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("serve exited %d: %s", code, logs.String())
			}
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, _ := engine.ReadLock(dir)
		if url, ok := strings.CutPrefix(info.Note, lockNotePrefix); ok {
			return url, logs, stop
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening: %s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not record its address in LOCK: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oldMemories writes an export file of n memories last written 400 days ago.
func oldMemories(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	when := time.Now().Add(-400 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
	for i := range n {
		fmt.Fprintf(&b, `{"id":"old-%02d","session":"carol","text":"carol's stale note number %d about topic %c%c","importance":0.5,"created":%q,"updated":%q}`+"\n",
			i, i, 'a'+i%26, 'k'+i%13, when, when)
	}
	path := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func sortLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// Every admin command gives the same output, run here on a closed store or
// through the server that holds it.
func TestAdminCommandsThroughServer(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice prefers green tea in the morning.")
	mustRun(t, dir, "", "remember", "--session", "bob", "--tag", "coffee", "Bob drinks pour-over coffee, never instant.")
	mustRun(t, dir, "", "import", oldMemories(t, 6))
	mustRun(t, dir, "", "tasks", "start", "trip", "--goal", "plan the trip to Porto")

	commands := [][]string{
		{"sessions"}, {"sessions", "--json"}, {"stats", "--json"}, {"check"}, {"archive", "list"}, {"archive", "list", "--json"},
		{"cleanup", "--dry-run"}, {"cleanup", "--dry-run", "--json", "--session", "carol", "--older-than", "300d"},
	}
	local := map[string]string{}
	for _, c := range commands {
		local[strings.Join(c, " ")] = mustRun(t, dir, "", c...)
	}
	localExport := mustRun(t, dir, "", "export", "--vectors")
	localStats := mustRun(t, dir, "", "stats")

	url, stop := startServe(t, dir)
	// Without the server, these would fail with "locked" (exit 3).
	for _, c := range commands {
		key := strings.Join(c, " ")
		if got := mustRun(t, dir, "", c...); got != local[key] {
			t.Errorf("memctl %s through the server:\n%s\nlocally:\n%s", key, got, local[key])
		}
	}
	if got := mustRun(t, dir, "", "export", "--vectors"); sortLines(withoutHeader(t, got)) != sortLines(withoutHeader(t, localExport)) {
		t.Errorf("export through the server differs:\n%.300s\nlocally:\n%.300s", got, localExport)
	}
	// stats: the same rows (memory bytes depend on the process's history).
	dropMem := regexp.MustCompile(`(?m)^memory bytes.*$`)
	if got := mustRun(t, dir, "", "stats"); dropMem.ReplaceAllString(got, "") != dropMem.ReplaceAllString(localStats, "") {
		t.Errorf("stats through the server:\n%s\nlocally:\n%s", got, localStats)
	}

	// The mutating commands, through the server.
	if out := mustRun(t, dir, "", "cleanup"); !strings.HasPrefix(out, "archived 6 memories\n") {
		t.Fatalf("cleanup: %q", out)
	}
	if out := mustRun(t, dir, "", "archive", "list"); strings.Count(out, "\n") != 6 || !strings.Contains(out, "old-03  carol  carol's stale note number 3") {
		t.Fatalf("archive list: %q", out)
	}
	if out := mustRun(t, dir, "", "archive", "restore", "old-01", "old-02"); out != "restored 2 memories\n" {
		t.Fatalf("restore: %q", out)
	}
	if out := mustRun(t, dir, "", "archive", "restore", "--all"); out != "restored 4 memories\n" {
		t.Fatalf("restore --all: %q", out)
	}
	if out := mustRun(t, dir, "", "compact"); !regexp.MustCompile(`^disk \d+ -> \d+ bytes, segments \d+ -> \d+\n$`).MatchString(out) {
		t.Fatalf("compact: %q", out)
	}
	exported := filepath.Join(t.TempDir(), "all.jsonl")
	_, errOut, code := memctl(t, dir, "", "export", "-o", exported)
	if code != 0 || errOut != "exported 8 memories, 0 conversations and 1 tasks to "+exported+"\n" {
		t.Fatalf("export -o: %d %q", code, errOut)
	}
	if fi, err := os.Stat(exported); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", fi, err)
	}
	bak := filepath.Join(t.TempDir(), "bak")
	if out := mustRun(t, dir, "", "backup", bak); out != "backed up to "+bak+"\n" {
		t.Fatalf("backup: %q", out)
	}
	if out, _, code := memctl(t, bak, "", "stats", "--json"); code != 0 || !strings.Contains(out, `"memories": 8`) {
		t.Fatalf("the streamed backup: exit %d\n%s", code, out)
	}
	if _, errOut, code := memctl(t, dir, "", "backup", bak); code != exitFailed || !strings.Contains(errOut, "not empty") {
		t.Fatalf("backup into a non-empty dir: %d %q", code, errOut)
	}
	if _, errOut, code := memctl(t, dir, "", "backup", "--server-side", "nightly"); code != exitFailed || !strings.Contains(errOut, "--backup-root") {
		t.Fatalf("server-side backup without a root: %d %q", code, errOut)
	}
	if out := mustRun(t, dir, "", "reembed", "--to", "lexical"); !strings.HasPrefix(out, "re-embedded with lexical (lexical") {
		t.Fatalf("reembed: %q", out)
	}
	if _, errOut, code := memctl(t, dir, "", "reembed", "--to", "nonsense"); code != exitFailed || !strings.Contains(errOut, "unknown --embedder") {
		t.Fatalf("reembed to a bad spec: %d %q", code, errOut)
	}
	// import into the served store: the same IDs again replace, nothing new.
	if out := mustRun(t, dir, "", "import", exported); out != "imported 8 memories, 1 conversations and tasks\n" {
		t.Fatalf("import: %q", out)
	}
	// repair needs the store closed: still "locked", exit 3.
	if _, errOut, code := memctl(t, dir, "", "repair"); code != exitLocked || !strings.Contains(errOut, "held by pid") {
		t.Fatalf("repair while served: %d %q", code, errOut)
	}
	// --server reaches it from anywhere, without --dir.
	if out, errOut, code := memctl(t, filepath.Join(t.TempDir(), "elsewhere"), "", "--server", url, "sessions"); code != 0 || !strings.Contains(out, "carol") {
		t.Fatalf("--server: %d %q %q", code, out, errOut)
	}
	stop()
	// After the server stops, the same commands work on the store directly.
	if out := mustRun(t, dir, "", "check"); out != "ok\n" {
		t.Fatalf("check after serve: %q", out)
	}
	if info, _ := engine.ReadLock(dir); info.Note != "" {
		t.Fatalf("LOCK still names a server after it stopped: %+v", info)
	}
}

func TestClientTokenAndUnreachable(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "a", "a fact worth keeping")
	startServe(t, dir, "--token", "sekrit")
	if _, errOut, code := memctl(t, dir, "", "stats"); code != exitFailed || !strings.Contains(errOut, "bearer key") {
		t.Fatalf("stats without the token: %d %q", code, errOut)
	}
	if out, errOut, code := memctl(t, dir, "", "--server-token", "sekrit", "sessions"); code != 0 || !strings.Contains(out, "a  ") {
		t.Fatalf("stats with the token: %d %q %q", code, out, errOut)
	}
	t.Setenv("ENGRAM_TOKEN", "sekrit")
	if _, _, code := memctl(t, dir, "", "check"); code != 0 {
		t.Fatalf("check with ENGRAM_TOKEN: %d", code)
	}

	// A store held by a process that serves nothing: still exit 3.
	other := filepath.Join(t.TempDir(), "other")
	s, err := memory.Open(other, memory.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, errOut, code := memctl(t, other, "", "stats"); code != exitLocked || !strings.Contains(errOut, "held by pid") {
		t.Fatalf("stats on a locked, unserved store: %d %q", code, errOut)
	}
	// A LOCK naming a server that does not answer: exit 3, saying so.
	if err := s.SetLockNote(lockNotePrefix + "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := memctl(t, other, "", "stats"); code != exitLocked || !strings.Contains(errOut, "did not answer") {
		t.Fatalf("stats with a dead server address: %d %q", code, errOut)
	}
	if _, errOut, code := memctl(t, other, "", "--server", "ftp://x", "stats"); code != exitUsage || !strings.Contains(errOut, "invalid server address") {
		t.Fatalf("bad --server: %d %q", code, errOut)
	}
}
