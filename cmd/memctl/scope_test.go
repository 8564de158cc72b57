package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/api"
	"github.com/engramdb/engram/memory"
)

// TestRecallExplainLexicalNote: recall --explain on a store with the built-in embedder ends with
// memory.LexicalNote, on a closed store and through the server that holds it; without --explain,
// and in JSON, nothing changes.
func TestRecallExplainLexicalNote(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "s")
	mustRun(t, dir, "", "remember", "--session", "a", "Alice drinks green tea every morning.")
	check := func(where string) {
		t.Helper()
		out := mustRun(t, dir, "", "recall", "--session", "a", "--explain", "tea")
		if !strings.HasSuffix(out, "\n"+memory.LexicalNote+"\n") || !strings.Contains(out, "green tea") {
			t.Fatalf("%s: recall --explain does not end with the note:\n%s", where, out)
		}
		if out := mustRun(t, dir, "", "recall", "--session", "a", "tea"); strings.Contains(out, memory.LexicalNote) {
			t.Fatalf("%s: recall without --explain printed the note:\n%s", where, out)
		}
		plain := mustRun(t, dir, "", "--json", "recall", "--session", "a", "--no-touch", "tea")
		explained := mustRun(t, dir, "", "--json", "recall", "--session", "a", "--no-touch", "--explain", "tea")
		var a, b api.RecallResponse
		if json.Unmarshal([]byte(plain), &a) != nil || json.Unmarshal([]byte(explained), &b) != nil || len(a.Results) != 1 || len(b.Results) != 1 ||
			strings.Contains(explained, "n-grams") {
			t.Fatalf("%s: recall --json --explain is not the JSON answer:\n%s", where, explained)
		}
	}
	check("closed store")
	_, stop := startServe(t, dir)
	check("through the server")
	stop()
}

// TestScopeCommands: --user-id, --agent-id and --run-id scope remember, recall, list and forget
// (mem0's search(user_id="alex", run_id="other-run") finds nothing added under run trip-42); a
// default session gives way to them; remember --messages reads a conversation (mem0's
// "content" too) and --infer distills it; context distill distills a session's turns once.
func TestScopeCommands(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "s")
	t.Setenv("ENGRAM_SESSION", "someone-else")
	mustRun(t, dir, "", "remember", "--user-id", "alex", "--run-id", "trip-42", "I am flying to Lisbon on Friday.")
	recall := func(args ...string) api.RecallResponse {
		t.Helper()
		var r api.RecallResponse
		out := mustRun(t, dir, "", append([]string{"--json", "recall", "--no-touch"}, args...)...)
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return r
	}
	if r := recall("--user-id", "alex", "--run-id", "other-run", "Lisbon"); len(r.Results) != 0 || r.SessionEmpty {
		t.Fatalf("recall in run other-run: %+v", r)
	}
	if r := recall("--user-id", "alex", "--run-id", "trip-42", "Lisbon"); len(r.Results) != 1 || r.Results[0].Session != "alex" || r.Results[0].Metadata["run_id"] != "trip-42" {
		t.Fatalf("recall in run trip-42: %+v", r)
	}
	if r := recall("--session", "alex", "Lisbon"); len(r.Results) != 1 {
		t.Fatalf("recall in the session: %+v", r)
	}
	if out := mustRun(t, dir, "", "recall", "--agent-id", "nobody", "Lisbon"); !strings.Contains(out, `session "nobody" holds none`) {
		t.Fatalf("recall of an empty agent: %s", out)
	}
	if out := mustRun(t, dir, "", "list", "--user-id", "alex", "--run-id", "other-run"); !strings.Contains(out, "(no memories)") {
		t.Fatalf("list of run other-run: %s", out)
	}
	if _, errOut, code := memctl(t, dir, "", "forget", "--run-id", "r", "someid"); code != exitUsage {
		t.Fatalf("forget IDs with a scope: %d %s", code, errOut)
	}

	// A conversation, in mem0's form.
	chat := filepath.Join(t.TempDir(), "chat.json")
	os.WriteFile(chat, []byte(`[{"role": "system", "content": "be nice"}, {"role": "user", "content": "Hi! I'm Alex and I'm allergic to peanuts."},
		{"role": "assistant", "content": "Nice to meet you, Alex! I'll remember that."}]`), 0o600)
	out := mustRun(t, dir, "", "remember", "--user-id", "alex", "--run-id", "trip-42", "--messages", chat, "--infer")
	if !strings.HasPrefix(out, "remembered ") || !strings.Contains(out, "I'm Alex and I'm allergic to peanuts.") || strings.Contains(out, "Nice to meet you") ||
		strings.Count(out, "\n") != 1 {
		t.Fatalf("remember --messages --infer:\n%s", out)
	}
	var res api.RememberResponse
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "--json", "remember", "--session", "v", "--messages", chat)), &res); err != nil || res.Turns != 2 || len(res.Events) != 2 {
		t.Fatalf("remember --messages verbatim: %+v %v", res, err)
	}
	for name, args := range map[string][]string{
		"infer without messages": {"remember", "--session", "v", "--infer", "I like tea."},
		"texts and messages":     {"remember", "--session", "v", "--messages", chat, "I like tea."},
		"not messages":           {"remember", "--session", "v", "--messages", "-"},
	} {
		if _, errOut, code := memctl(t, dir, `{"role": "user"}`, args...); code != exitUsage {
			t.Errorf("%s: exit %d, %s", name, code, errOut)
		}
	}
	mustRun(t, dir, "", "forget", "--user-id", "alex", "--run-id", "trip-42", "--all")
	if r := recall("--user-id", "alex", "Lisbon peanuts"); len(r.Results) != 0 {
		t.Fatalf("after forgetting run trip-42: %+v", r)
	}

	// context distill: once.
	mustRun(t, dir, "", "context", "add", "--session", "c", "I moved to Denver last week.")
	if out := mustRun(t, dir, "", "context", "distill", "--session", "c"); !strings.Contains(out, "remembered ") || !strings.Contains(out, "I moved to Denver last week.") {
		t.Fatalf("context distill:\n%s", out)
	}
	if out := mustRun(t, dir, "", "context", "distill", "--session", "c"); !strings.Contains(out, "nothing to remember") {
		t.Fatalf("context distill again:\n%s", out)
	}
}
