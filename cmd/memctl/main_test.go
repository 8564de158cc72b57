package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// memctl runs one command line in-process against dir and returns stdout,
// stderr and the exit code.
func memctl(t *testing.T, dir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--dir", dir}, args...), strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// isolate keeps the user's config and environment out of a test.
func isolate(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "ENGRAM_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func mustRun(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := memctl(t, dir, stdin, args...)
	if code != exitOK {
		t.Fatalf("memctl %q: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

func TestRememberRecallForget(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "init")
	out := mustRun(t, dir, "", "remember", "--session", "alice", "Alice prefers green tea in the morning.")
	if !strings.HasPrefix(out, "remembered ") {
		t.Fatalf("remember output %q", out)
	}
	mustRun(t, dir, "Bob 喜欢喝手冲咖啡。", "remember", "--session", "bob", "-")

	var rec recallOutput
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "recall", "--json", "--session", "alice", "green tea")), &rec); err != nil {
		t.Fatal(err)
	}
	results := rec.Results
	if len(results) != 1 || results[0].Session != "alice" || !strings.Contains(results[0].Text, "green tea") || results[0].Score.Final <= 0 {
		t.Fatalf("alice's recall = %+v", results)
	}
	aliceID := results[0].ID
	// Bob's memory never leaks into alice's session, even for Bob's words.
	rec = recallOutput{}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "recall", "--json", "--session", "alice", "咖啡")), &rec); err != nil {
		t.Fatal(err)
	}
	results = rec.Results
	for _, r := range results {
		if r.Session != "alice" {
			t.Fatalf("recall in alice returned %+v", r)
		}
	}
	explain := mustRun(t, dir, "", "recall", "--explain", "--session", "bob", "咖啡")
	if !strings.Contains(explain, "KEYWORD") || !strings.Contains(explain, "咖啡") {
		t.Fatalf("explain output:\n%s", explain)
	}
	prompt := mustRun(t, dir, "", "recall", "--prompt", "--session", "bob", "咖啡")
	if !strings.Contains(prompt, "<memories>") || !strings.Contains(prompt, "咖啡") {
		t.Fatalf("prompt output:\n%s", prompt)
	}

	var sessions []map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "sessions", "--json")), &sessions); err != nil || len(sessions) != 2 {
		t.Fatalf("sessions = %v (%v)", sessions, err)
	}
	out = mustRun(t, dir, "", "forget", "--session", "bob", "--all")
	if !strings.HasPrefix(out, "forgot 1 memories (restorable") {
		t.Fatalf("forget output %q", out)
	}
	if out := mustRun(t, dir, "", "recall", "--session", "bob", "咖啡"); !strings.Contains(out, `(no memories: session "bob" holds none)`) {
		t.Fatalf("bob still has memories:\n%s", out)
	}
	mustRun(t, dir, "", "forget", aliceID)
	if n := countMemories(t, dir); n != 0 {
		t.Fatalf("%d memories left", n)
	}
}

func countMemories(t *testing.T, dir string) int {
	var st struct{ Memories int }
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	return st.Memories
}

func TestUsageErrorsExitTwo(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	for _, args := range [][]string{
		{"recall"},                         // no query
		{"recall", "a", "b"},               // two queries
		{"recall", "--mode", "fuzzy", "x"}, // bad mode
		{"remember"},                       // nothing to remember
		{"forget"},                         // nothing to forget
		{"no-such-command"},
		{"recall", "--no-such-flag", "x"},
		{"cleanup", "--older-than", "soon"},
		{"serve", "--addr", "0.0.0.0:0"}, // off loopback without a token
		{"--embedder", "word2vec", "stats"},
	} {
		_, errOut, code := memctl(t, dir, "", args...)
		if code != exitUsage || !strings.HasPrefix(errOut, "memctl: ") {
			t.Errorf("memctl %q: exit %d, stderr %q; want exit %d with a message", args, code, errOut, exitUsage)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a failed command line created a store")
	}
}

func TestRuntimeErrorExitOne(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	if _, errOut, code := memctl(t, dir, "", "remember", "--session", "s", "   "); code != exitFailed || !strings.Contains(errOut, "memctl:") {
		t.Fatalf("whitespace-only text: exit %d, %q", code, errOut)
	}
	if _, _, code := memctl(t, dir, "", "tasks", "show", "nope"); code != exitFailed {
		t.Fatalf("unknown task: exit %d", code)
	}
	notStore := t.TempDir()
	os.WriteFile(filepath.Join(notStore, "MANIFEST"), []byte("garbage"), 0o600)
	if _, errOut, code := memctl(t, notStore, "", "stats"); code != exitFailed || !strings.Contains(errOut, notStore) {
		t.Fatalf("not a store: exit %d, %q", code, errOut)
	}
}

func TestQuickstart(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "qs")
	for i := 0; i < 2; i++ { // a rerun shows the same store, not duplicates
		out := mustRun(t, dir, "", "quickstart")
		if !strings.Contains(out, "Remembered 8 memories") || !strings.Contains(out, "The store is in "+dir) {
			t.Fatalf("quickstart output:\n%s", out)
		}
		// Its last lines say what the built-in embedder cannot do and how to get a model.
		if !strings.HasSuffix(out, memory.LexicalNote+"\n") || !strings.Contains(out, "memctl model pull bge-m3") {
			t.Fatalf("quickstart does not end with the embedder note:\n%s", out)
		}
		// The first result of each demo query is the memory it is about.
		for _, want := range []string{"green tea", "喜欢喝咖啡", "陆家嘴", "小学"} {
			if !strings.Contains(out, want) {
				t.Fatalf("quickstart output lacks %q:\n%s", want, out)
			}
		}
		if n := countMemories(t, dir); n != 8 {
			t.Fatalf("run %d: %d memories, want 8", i, n)
		}
		// One ranking: the recall command ranks and scores as quickstart did (same defaults).
		q := "what does Alice like to drink?"
		block := strings.SplitN(out, fmt.Sprintf("recall --session alice --explain %q\n", q), 2)
		if len(block) != 2 {
			t.Fatalf("quickstart output lacks the %q block:\n%s", q, out)
		}
		want := strings.SplitN(block[1], "\n\n", 2)[0]
		// (The table; recall --explain then prints the lexical embedder's note, as quickstart does at its end.)
		got := strings.SplitN(mustRun(t, dir, "", "recall", "--session", "alice", "--explain", "--k", "3", q), "\n\n", 2)[0]
		if got != want {
			t.Fatalf("recall after quickstart:\n%s\nquickstart showed:\n%s", got, want)
		}
	}
}

func TestTasks(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "tasks", "start", "t1", "--goal", "write the report")
	mustRun(t, dir, "", "tasks", "step", "t1", "collect", "--result", `{"rows":42}`, "--next", "draft")
	if _, _, code := memctl(t, dir, "", "tasks", "step", "t1", "x", "--result", "not json"); code != exitUsage {
		t.Fatalf("invalid JSON result: exit %d", code)
	}
	out := mustRun(t, dir, "", "tasks", "show", "t1")
	if !strings.Contains(out, `[done] collect -> {"rows":42}`) || !strings.Contains(out, "next: draft") {
		t.Fatalf("task:\n%s", out)
	}
	mustRun(t, dir, "", "tasks", "finish", "t1")
	if out := mustRun(t, dir, "", "tasks"); !strings.Contains(out, "t1") || !strings.Contains(out, "done") {
		t.Fatalf("tasks:\n%s", out)
	}
	mustRun(t, dir, "", "tasks", "delete", "t1")
	if out := mustRun(t, dir, "", "tasks", "list"); !strings.Contains(out, "(no tasks)") {
		t.Fatalf("tasks after delete:\n%s", out)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	isolate(t)
	src := filepath.Join(t.TempDir(), "src")
	mustRun(t, src, "", "remember", "--session", "s1", "--tag", "x", "--importance", "0.9", "The launch is on March 3rd.")
	mustRun(t, src, "", "remember", "--session", "s2", "会议改到下周二下午三点。")
	{ // a conversation and a task, through the library (the CLI has no turn command)
		s, err := memory.Open(src, memory.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := s.AddTurn(ctx, "s1", memory.Turn{Role: "user", Text: "book the flight to Porto"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartSessionTask(ctx, "s2", "trip", "plan the trip"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateStep(ctx, "trip", memory.Step{Name: "book", Status: memory.StepDone, Result: json.RawMessage(`{"seat":"12A"}`)}, "pack"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "export.jsonl")
	mustRun(t, src, "", "export", "--vectors", "--out", file)
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v", st, err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if out := mustRun(t, dst, "", "import", file); out != "imported 2 memories, 2 conversations and tasks\n" {
		t.Fatalf("import output %q", out)
	}
	// The header line (docs/format/export.md) says when each was written.
	a := withoutHeader(t, mustRun(t, src, "", "export"))
	b := withoutHeader(t, mustRun(t, dst, "", "export"))
	if a != b || strings.Count(a, "\n") != 4 || !strings.Contains(a, `"conversation":`) || !strings.Contains(a, `"seat":"12A"`) {
		t.Fatalf("exports differ:\n%s\n---\n%s", a, b)
	}
	if out := mustRun(t, dst, "", "tasks", "show", "trip"); !strings.Contains(out, "pack") {
		t.Fatalf("imported task:\n%s", out)
	}
	if out := withoutHeader(t, mustRun(t, src, "", "export", "--session", "s2")); strings.Count(out, "\n") != 2 || !strings.Contains(out, `"task":`) || strings.Contains(out, "Porto") {
		t.Fatalf("export of one session:\n%s", out)
	}
	// A malformed line fails the import before anything is written.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(strings.SplitN(a, "\n", 2)[0]+"\n{not json\n"), 0o600)
	empty := filepath.Join(t.TempDir(), "empty")
	if _, _, code := memctl(t, empty, "", "import", bad); code != exitFailed {
		t.Fatalf("bad import: exit %d", code)
	}
	// The failed import created no store.
	if _, errOut, code := memctl(t, empty, "", "stats"); code != exitFailed || !strings.Contains(errOut, "not an engram store") {
		t.Fatalf("stats after a failed import into a new directory: %d %q", code, errOut)
	}
}

func TestCleanupArchiveRestore(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "s", "An old note about the 2019 offsite.")
	out := mustRun(t, dir, "", "cleanup", "--dry-run", "--older-than", "1ns")
	if !strings.Contains(out, "would archive 1 memories") || countMemories(t, dir) != 1 {
		t.Fatalf("dry run:\n%s", out)
	}
	mustRun(t, dir, "", "cleanup", "--older-than", "1ns")
	if countMemories(t, dir) != 0 {
		t.Fatal("cleanup left the memory live")
	}
	if out := mustRun(t, dir, "", "archive", "list"); !strings.Contains(out, "2019 offsite") {
		t.Fatalf("archive list:\n%s", out)
	}
	mustRun(t, dir, "", "archive", "restore", "--all")
	if countMemories(t, dir) != 1 {
		t.Fatal("restore did not bring the memory back")
	}
}

func TestAdminCommands(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "s", "Backups are taken nightly at 02:00.")
	if out := mustRun(t, dir, "", "check"); out != "ok\n" {
		t.Fatalf("check: %q", out)
	}
	mustRun(t, dir, "", "compact")
	backup := filepath.Join(t.TempDir(), "backup")
	mustRun(t, dir, "", "backup", backup)
	if out := mustRun(t, backup, "", "recall", "--session", "s", "backups nightly"); !strings.Contains(out, "02:00") {
		t.Fatalf("backup recall:\n%s", out)
	}
	if out := mustRun(t, dir, "", "model", "info"); !strings.Contains(out, "lexical/") {
		t.Fatalf("model info:\n%s", out)
	}
}

func TestConfigPrecedence(t *testing.T) {
	isolate(t)
	cfgDir := t.TempDir()
	fileStore := filepath.Join(t.TempDir(), "from-file")
	envStore := filepath.Join(t.TempDir(), "from-env")
	cfg := filepath.Join(cfgDir, "config.json")
	os.WriteFile(cfg, []byte(`{"dir": "`+fileStore+`", "json": true}`), 0o600)
	t.Setenv("ENGRAM_CONFIG", cfg)

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"init"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("init: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"dir": "`+fileStore+`"`) { // dir and json both from the file
		t.Fatalf("config file not applied: %s", out.String())
	}
	t.Setenv("ENGRAM_DIR", envStore)
	out.Reset()
	run(context.Background(), []string{"init"}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(out.String(), envStore) {
		t.Fatalf("env did not win over the file: %s", out.String())
	}
	flagStore := filepath.Join(t.TempDir(), "from-flag")
	out.Reset()
	run(context.Background(), []string{"init", "--dir", flagStore}, strings.NewReader(""), &out, &errb)
	if !strings.Contains(out.String(), flagStore) {
		t.Fatalf("flag did not win over env: %s", out.String())
	}
	os.WriteFile(cfg, []byte(`{"dir": ["not", "a", "string"]}`), 0o600)
	if code := run(context.Background(), []string{"init"}, strings.NewReader(""), &out, &errb); code == 0 {
		t.Fatal("a malformed config file was accepted")
	}
}

func TestLockedStoreExitThree(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, dir: dir, embedder: "lexical"}
	if _, err := a.openStore(); err != nil {
		t.Fatal(err)
	}
	defer a.close()
	if _, errOut, code := memctl(t, dir, "", "stats"); code != exitLocked || !strings.Contains(errOut, "locked") {
		t.Fatalf("second open: exit %d, %q", code, errOut)
	}
}

func TestRepair(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "remember", "--session", "s", "The WAL keeps this memory safe.")
	if out := mustRun(t, dir, "", "repair"); !strings.Contains(out, "healthy") {
		t.Fatalf("repair on a healthy store: %q", out)
	}
	// Damage the newest WAL segment's tail and repair.
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*"))
	if len(segs) == 0 {
		t.Fatal("no WAL segments")
	}
	last := segs[len(segs)-1]
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Close()
	mustRun(t, dir, "", "repair")
	if out := mustRun(t, dir, "", "recall", "--session", "s", "WAL memory"); !strings.Contains(out, "keeps this memory safe") {
		t.Fatalf("memory lost after repair:\n%s", out)
	}
	// Every manifest and CURRENT deleted: check fails, repair rebuilds
	// from seg/ and wal/, nothing is lost.
	mustRun(t, dir, "", "remember", "--session", "s", "A second memory about manifests.")
	mustRun(t, dir, "", "compact")
	manifests, _ := filepath.Glob(filepath.Join(dir, "MANIFEST*"))
	for _, f := range append(manifests, filepath.Join(dir, "CURRENT")) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, code := memctl(t, dir, "", "check"); code == exitOK {
		t.Fatal("check passed on a store without a manifest")
	}
	if out := mustRun(t, dir, "", "repair"); !strings.Contains(out, "rebuilt") {
		t.Fatalf("repair without a manifest: %q", out)
	}
	mustRun(t, dir, "", "check")
	for _, want := range []string{"keeps this memory safe", "second memory about manifests"} {
		if out := mustRun(t, dir, "", "recall", "--session", "s", "memory manifests WAL"); !strings.Contains(out, want) {
			t.Fatalf("%q lost after rebuilding the manifest:\n%s", want, out)
		}
	}
}

// withoutHeader drops the header line of an export.
func withoutHeader(t *testing.T, export string) string {
	t.Helper()
	head, rest, _ := strings.Cut(export, "\n")
	if !strings.Contains(head, `"format":"engram-export"`) {
		t.Fatalf("export without its header line: %.200s", export)
	}
	return rest
}

// TestCloseErrorFails: a command whose final flush fails (seg/ replaced by
// a file, so no segment can be written) exits non-zero; before, remember
// printed the flush error and exited 0.
func TestCloseErrorFails(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "init")
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, dir: dir, embedder: "lexical"}
	s, err := a.openStore()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(context.Background(), "s", "a memory that cannot be flushed", memory.RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "seg")
	if err := os.RemoveAll(seg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.close(); err == nil {
		t.Fatal("close after a failed final flush returned nil")
	}
}
