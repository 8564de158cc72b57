package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestGetListUpdateHistory drives get, list, update, history and revert, with --json, and the
// filter flags of list, recall, forget and export.
func TestGetListUpdateHistory(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	var rem []rememberOutput
	json.Unmarshal([]byte(mustRun(t, dir, "", "--json", "remember", "--session", "alice", "--tag", "drinks", "--source", "chat",
		"--metadata", `{"confidence": 0.9}`, "Alice drinks green tea every morning.")), &rem)
	mustRun(t, dir, "", "remember", "--session", "alice", "--tag", "family", "Alice's sister lives in Porto.")
	mustRun(t, dir, "", "remember", "--session", "bob", "Bob drinks black coffee.")
	if len(rem) != 1 {
		t.Fatalf("remember --json: %+v", rem)
	}
	id := rem[0].ID

	var m memory.MemoryJSON
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "--json", "get", id)), &m); err != nil || m.Text != "Alice drinks green tea every morning." || m.Metadata["confidence"] != 0.9 || m.Source != "chat" {
		t.Fatalf("get --json: %+v %v", m, err)
	}
	if out := mustRun(t, dir, "", "get", id); !strings.Contains(out, "green tea") || !strings.Contains(out, `{"confidence":0.9}`) {
		t.Fatalf("get: %q", out)
	}
	if _, errOut, code := memctl(t, dir, "", "get", id, "nope"); code != exitFailed || !strings.Contains(errOut, `"nope"`) {
		t.Fatalf("get unknown: %d %q", code, errOut)
	}

	var page struct {
		Memories   []memory.MemoryJSON `json:"memories"`
		NextCursor string              `json:"next_cursor"`
	}
	list := func(args ...string) int {
		t.Helper()
		page.Memories, page.NextCursor = nil, ""
		if err := json.Unmarshal([]byte(mustRun(t, dir, "", append([]string{"--json", "list"}, args...)...)), &page); err != nil {
			t.Fatal(err)
		}
		return len(page.Memories)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--session", "alice"}, 2},
		{[]string{"--all-sessions"}, 3},
		{[]string{"--session", "alice", "--tag", "family"}, 1},
		{[]string{"--all-sessions", "--source", "chat"}, 1},
		{[]string{"--all-sessions", "--since", "1h"}, 3},
		{[]string{"--all-sessions", "--until", "2000-01-01"}, 0},
		{[]string{"--all-sessions", "--where", `{"metadata.confidence": {"range": {"gte": 0.5}}}`}, 1},
	} {
		if n := list(c.args...); n != c.want {
			t.Errorf("list %v: %d memories, want %d", c.args, n, c.want)
		}
	}
	if n := list("--session", "alice", "--limit", "1"); n != 1 || page.NextCursor == "" {
		t.Fatalf("list --limit 1: %d, next %q", n, page.NextCursor)
	}
	if n := list("--session", "alice", "--limit", "1", "--cursor", page.NextCursor); n != 1 || page.NextCursor != "" {
		t.Fatalf("list page 2: %d, next %q", n, page.NextCursor)
	}
	for _, bad := range [][]string{{"list"}, {"list", "--session", "a", "--all-sessions"}, {"list", "--all-sessions", "--where", `{"colour": 1}`},
		{"list", "--all-sessions", "--since", "last week"}, {"update", id}, {"update", id, "--metadata", "[1]"}, {"history", "revert", id, "x"}} {
		if _, errOut, code := memctl(t, dir, "", bad...); code != exitUsage {
			t.Errorf("memctl %q: exit %d %q, want %d", bad, code, errOut, exitUsage)
		}
	}

	if out := mustRun(t, dir, "", "update", id, "--text", "Alice drinks oolong tea every morning."); out != "updated "+id+"\n" {
		t.Fatalf("update: %q", out)
	}
	if out := mustRun(t, dir, "", "recall", "--session", "alice", "--mode", "keyword", "oolong"); !strings.Contains(out, "oolong") {
		t.Fatalf("recall after update: %q", out)
	}
	var hist struct {
		Versions []memory.VersionJSON `json:"versions"`
	}
	json.Unmarshal([]byte(mustRun(t, dir, "", "--json", "history", id)), &hist)
	if len(hist.Versions) != 1 || hist.Versions[0].Change != memory.ChangeUpdate || !strings.Contains(hist.Versions[0].Memory.Text, "green tea") {
		t.Fatalf("history --json: %+v", hist)
	}
	if out := mustRun(t, dir, "", "history", id); !strings.Contains(out, "update") || !strings.Contains(out, "green tea") {
		t.Fatalf("history: %q", out)
	}
	if out := mustRun(t, dir, "", "history", "revert", id, "1"); !strings.Contains(out, "version 1") {
		t.Fatalf("revert: %q", out)
	}
	if _, errOut, code := memctl(t, dir, "", "history", "nope"); code != exitFailed || !strings.Contains(errOut, "nope") {
		t.Fatalf("history of an unknown ID: %d %q", code, errOut)
	}

	// recall filters; an empty session says so in --explain and JSON.
	if out := mustRun(t, dir, "", "recall", "--session", "alice", "--tag", "family", "Alice"); strings.Contains(out, "tea") || !strings.Contains(out, "Porto") {
		t.Fatalf("recall --tag: %q", out)
	}
	if out := mustRun(t, dir, "", "recall", "--explain", "--session", "nobody", "tea"); !strings.Contains(out, `session "nobody" holds none`) {
		t.Fatalf("recall --explain on an empty session: %q", out)
	}
	if out := mustRun(t, dir, "", "--json", "recall", "--session", "nobody", "tea"); !strings.Contains(out, `"session_empty": true`) {
		t.Fatalf("recall --json on an empty session: %q", out)
	}
	if out := mustRun(t, dir, "", "--json", "recall", "--session", "alice", "--min-score", "0.99", "xylophone"); strings.Contains(out, "session_empty") {
		t.Fatalf("recall --json without a match: %q", out)
	}

	// export --where: the versioned format, only what the filter selects.
	out := mustRun(t, dir, "", "export", "--where", `{"session": "alice"}`)
	h, ms, err := memory.ReadExport(strings.NewReader(out))
	if err != nil || h.Version != memory.ExportVersion || len(ms) != 2 {
		t.Fatalf("export --where: %+v %d %v\n%s", h, len(ms), err, out)
	}

	// forget: unknown IDs fail and delete nothing; a filter forgets what it selects.
	if _, errOut, code := memctl(t, dir, "", "forget", id, "ghost"); code != exitFailed || !strings.Contains(errOut, `"ghost"`) {
		t.Fatalf("forget with an unknown ID: %d %q", code, errOut)
	}
	if n := list("--all-sessions"); n != 3 {
		t.Fatalf("a failed forget deleted memories: %d left", n)
	}
	if out := mustRun(t, dir, "", "forget", "--session", "alice", "--tag", "family"); !strings.HasPrefix(out, "forgot 1 memories (restorable") {
		t.Fatalf("forget --tag: %q", out)
	}
	if _, _, code := memctl(t, dir, "", "forget", "--tag", "family"); code != exitUsage {
		t.Fatalf("forget with a filter but no session: %d", code)
	}
	if _, errOut, code := memctl(t, dir, "", "archive", "restore", "nonexistent"); code != exitFailed || !strings.Contains(errOut, "nonexistent") {
		t.Fatalf("archive restore nonexistent: %d %q", code, errOut)
	}
}

// TestClearOutcomes: a command that does not create a store fails on a directory that holds
// none (and creates nothing); remember needs a session.
func TestClearOutcomes(t *testing.T) {
	isolate(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	for _, args := range [][]string{{"recall", "tea"}, {"stats"}, {"list", "--all-sessions"}, {"get", "x"}, {"forget", "x"}, {"sessions"}, {"export"}} {
		if _, errOut, code := memctl(t, missing, "", args...); code != exitFailed || !strings.Contains(errOut, "is not an engram store") {
			t.Errorf("memctl %q on a missing directory: exit %d %q", args, code, errOut)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a failed command created %s", missing)
	}
	empty := t.TempDir()
	if _, _, code := memctl(t, empty, "", "recall", "tea"); code != exitFailed {
		t.Fatalf("recall in an empty directory: %d", code)
	}
	if _, errOut, code := memctl(t, empty, "", "remember", "a fact"); code != exitUsage || !strings.Contains(errOut, "--session") {
		t.Fatalf("remember without a session: %d %q", code, errOut)
	}
	mustRun(t, empty, "", "remember", "--session", "", "a fact in the default session")
	t.Setenv("ENGRAM_SESSION", "carol")
	mustRun(t, empty, "", "remember", "a fact for carol")
	if out := mustRun(t, empty, "", "--json", "list", "--session", "carol"); !strings.Contains(out, "a fact for carol") {
		t.Fatalf("ENGRAM_SESSION did not set the session: %s", out)
	}
}
