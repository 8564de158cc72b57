package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// servedPair returns two copies of one store: the first for commands run on
// it directly, the second held by a running `memctl serve`.
func servedPair(t *testing.T) (local, served string) {
	t.Helper()
	isolate(t)
	local = filepath.Join(t.TempDir(), "store")
	var b strings.Builder
	when := time.Now().Add(-10 * 24 * time.Hour).UTC().Format(time.RFC3339Nano)
	for i, m := range []struct{ session, text, extra string }{
		{"alice", "Alice prefers green tea in the morning.", `"tags":["drinks","morning"],"source":"chat"`},
		{"alice", "Alice flies to Osaka on Friday for the conference.", `"tags":["travel"],"metadata":{"project":"apollo","confidence":0.9}`},
		{"bob", "Bob drinks pour-over coffee, never instant.", `"source":"doc:notes.md"`},
		{"bob", "Bob's terminal title is \u001b]0;pwned\u0007 and his tea is black.", ``},
	} {
		extra := m.extra
		if extra != "" {
			extra = "," + extra
		}
		fmt.Fprintf(&b, `{"id":"m%d","session":%s,"text":%s,"importance":0.5,"created":%q,"updated":%q%s}`+"\n", i+1, jsonString(m.session), jsonString(m.text), when, when, extra)
	}
	file := filepath.Join(t.TempDir(), "seed.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, local, "", "import", file)
	served = filepath.Join(t.TempDir(), "served")
	if err := os.CopyFS(served, os.DirFS(local)); err != nil {
		t.Fatal(err)
	}
	startServe(t, served)
	return local, served
}

// sameThroughServer runs each command on the local store and on the served
// copy (where it goes through the API: the store is locked) and compares
// stdout and exit code; norm (nil: none) rewrites what legitimately differs.
func sameThroughServer(t *testing.T, local, served string, norm func(string) string, commands ...[]string) {
	t.Helper()
	if norm == nil {
		norm = func(s string) string { return s }
	}
	for _, c := range commands {
		wantOut, wantErr, wantCode := memctl(t, local, "", c...)
		gotOut, gotErr, gotCode := memctl(t, served, "", c...)
		if gotCode != wantCode || norm(gotOut) != norm(wantOut) {
			t.Errorf("memctl %q through the server: exit %d\n%s%s\nlocally: exit %d\n%s%s", c, gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
		}
		if gotCode == exitLocked || strings.Contains(gotErr, "locked") {
			t.Errorf("memctl %q did not go through the server: %s", c, gotErr)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestReadCommandsThroughServer(t *testing.T) {
	local, served := servedPair(t)
	sameThroughServer(t, local, served, nil,
		[]string{"get", "m1"}, []string{"get", "m2", "m4"}, []string{"get", "--json", "m2"}, []string{"get", "--json", "m1", "m3"},
		[]string{"get", "--json", "--vector", "m1"}, []string{"get", "m1", "nosuch", "gone"}, []string{"get"},
		[]string{"list", "--session", "alice"}, []string{"list", "--all-sessions", "--json"},
		[]string{"list", "--session", "alice", "--tag", "travel"}, []string{"list", "--all-sessions", "--limit", "1"},
		[]string{"list", "--all-sessions", "--since", "30d", "--where", `{"metadata.project": "apollo"}`},
		[]string{"list", "--session", "nobody"}, []string{"list"}, []string{"list", "--all-sessions", "--where", "{"},
		[]string{"sessions"}, []string{"sessions", "--json"},
	)
}

// roundDecay rounds the JSON decay and final scores, which move with the clock between two runs.
func roundDecay(s string) string {
	return decayScore.ReplaceAllStringFunc(s, func(m string) string {
		k, v, _ := strings.Cut(m, ": ")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return m
		}
		return fmt.Sprintf("%s: %.6f", k, f)
	})
}

var decayScore = regexp.MustCompile(`"(decay|final)": [-0-9.e]+`)

func TestRecallThroughServer(t *testing.T) {
	local, served := servedPair(t)
	sameThroughServer(t, local, served, roundDecay,
		[]string{"recall", "--no-touch", "--session", "alice", "what does Alice drink?"},
		[]string{"recall", "--no-touch", "--session", "alice", "--explain", "tea"},
		[]string{"recall", "--no-touch", "--all-sessions", "--json", "tea"},
		[]string{"recall", "--no-touch", "--all-sessions", "--explain", "--mode", "keyword", "tea"},
		[]string{"recall", "--no-touch", "--all-sessions", "--fusion", "rrf", "--k", "2", "coffee"},
		[]string{"recall", "--no-touch", "--session", "alice", "--tag", "travel", "trip"},
		[]string{"recall", "--no-touch", "--session", "alice", "--prompt", "tea"},
		[]string{"recall", "--no-touch", "--session", "alice", "--prompt", "--json", "tea"},
		[]string{"recall", "--no-touch", "--session", "alice", "--turn", "I'm flying soon", "--turn", "what should I pack?"},
		[]string{"recall", "--no-touch", "--session", "nobody", "tea"},
		[]string{"recall", "--no-touch", "--session", "nobody", "--json", "tea"},
		[]string{"recall", "--no-touch", "--session", "alice", "--mode", "bogus", "tea"},
		[]string{"recall", "--no-touch", "--session", "alice", "--k", "-1", "tea"},
	)
	// Without --no-touch the access is counted, here and there alike.
	sameThroughServer(t, local, served, nil, []string{"recall", "--session", "bob", "coffee"})
	lastAccess := regexp.MustCompile(`(?m)^last access.*$`)
	sameThroughServer(t, local, served, func(s string) string { return lastAccess.ReplaceAllString(s, "last access") }, []string{"get", "m3"})
}

func TestRememberThroughServer(t *testing.T) {
	local, served := servedPair(t)
	ids := regexp.MustCompile(`[0-9a-f]{16,}`)
	norm := func(s string) string { return ids.ReplaceAllString(s, "ID") }
	sameThroughServer(t, local, served, norm,
		[]string{"remember", "--session", "carol", "Carol keeps bees on her roof."},
		[]string{"remember", "--session", "carol", "--json", "--tag", "bees", "--source", "chat", "--metadata", `{"hives": 3}`, "Carol sells honey at the market."},
		[]string{"remember", "--session", "alice", "Alice prefers green tea in the morning."}, // a duplicate: merged
		[]string{"remember", "--session", "carol", "--importance", "7", "bad importance"},
		[]string{"remember", "--session", "carol"},
		[]string{"list", "--session", "carol"},
	)
	out := mustRun(t, served, "", "list", "--session", "carol", "--json")
	if !strings.Contains(out, `"hives": 3`) || !strings.Contains(out, "Carol keeps bees") {
		t.Fatalf("the served store lacks what was remembered through it:\n%s", out)
	}
}

func TestUpdateHistoryRevertThroughServer(t *testing.T) {
	local, served := servedPair(t)
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?Z?)?`)
	norm := func(s string) string { return stamps.ReplaceAllString(s, "TIME") }
	sameThroughServer(t, local, served, norm,
		[]string{"update", "m1", "--text", "Alice now prefers oolong tea."},
		[]string{"update", "m1", "--json", "--tag", "drinks", "--importance", "0.8", "--metadata", `{"confidence": 0.7}`},
		[]string{"update", "m2", "--source", "doc:\u001b[31mred"},
		[]string{"update", "nosuch", "--text", "x"}, []string{"update", "m1", "--importance", "9"}, []string{"update", "m1"},
		[]string{"get", "m1"}, []string{"history", "m1"}, []string{"history", "--json", "m1"},
		[]string{"history", "m3"}, []string{"history", "--json", "m3"}, []string{"history", "nosuch"},
		[]string{"history", "revert", "m1", "1"}, []string{"history", "revert", "--json", "m1", "2"},
		[]string{"history", "revert", "m1", "99"}, []string{"history", "revert", "nosuch", "1"}, []string{"history", "revert", "m1", "x"},
		[]string{"get", "--json", "m1"}, []string{"history", "m1"},
	)
}

func TestTasksThroughServer(t *testing.T) {
	local, served := servedPair(t)
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	norm := func(s string) string { return stamps.ReplaceAllString(s, "TIME") }
	sameThroughServer(t, local, served, norm,
		[]string{"tasks"}, []string{"tasks", "list", "--json"},
		[]string{"tasks", "start", "trip", "--goal", "plan the trip to \u001b[2JPorto"},
		[]string{"tasks", "start", "--json", "pack", "--goal", "pack the bags"},
		[]string{"tasks", "start", "trip", "--goal", "again"},
		[]string{"tasks", "step", "trip", "flights", "--result", `{"airline": "TAP", "price": 212}`, "--next", "hotel"},
		[]string{"tasks", "step", "--json", "trip", "hotel", "--status", "running"},
		[]string{"tasks", "step", "trip", "bad", "--status", "nonsense"},
		[]string{"tasks", "step", "trip", "x", "--result", "not json"},
		[]string{"tasks", "step", "nosuch", "flights"},
		[]string{"tasks", "show", "trip"}, []string{"tasks", "show", "--json", "trip"}, []string{"tasks", "show", "nosuch"},
		[]string{"tasks", "finish", "pack", "--status", "failed"}, []string{"tasks", "finish", "--json", "trip"},
		[]string{"tasks", "finish", "nosuch"},
		[]string{"tasks", "list"}, []string{"tasks", "--json"},
		[]string{"tasks", "delete", "pack"}, []string{"tasks", "delete", "--json", "trip"}, []string{"tasks", "delete", "nosuch"},
		[]string{"tasks"},
	)
}

// TestTaskSessionsThroughServer: task IDs are per session; --session names a task's session,
// locally and through the server alike, and is needed when several sessions have the ID.
func TestTaskSessionsThroughServer(t *testing.T) {
	local, served := servedPair(t)
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	norm := func(s string) string { return stamps.ReplaceAllString(s, "TIME") }
	sameThroughServer(t, local, served, norm,
		[]string{"tasks", "start", "--session", "alice", "plan", "--goal", "alice's plan"},
		[]string{"tasks", "start", "--session", "bob", "plan", "--goal", "bob's plan"},
		[]string{"tasks", "start", "--session", "bob", "plan", "--goal", "twice"},
		[]string{"tasks", "start", "plan", "--goal", "a plan of no session"},
		[]string{"tasks", "show", "plan"},
		[]string{"tasks", "show", "--session", "bob", "plan"},
		[]string{"tasks", "step", "--session", "alice", "plan", "draft", "--next", "send"},
		[]string{"tasks", "step", "plan", "draft"},
		[]string{"tasks", "list"}, []string{"tasks", "--json"},
		[]string{"tasks", "finish", "--session", "", "plan", "--status", "failed"},
		[]string{"tasks", "delete", "--session", "bob", "plan"},
		[]string{"tasks", "delete", "--session", "alice", "plan"},
		[]string{"tasks", "show", "plan"},
		[]string{"tasks", "show", "--session", "carol", "plan"},
	)
	out := mustRun(t, served, "", "tasks", "show", "plan")
	if !strings.Contains(out, "a plan of no session") || !strings.Contains(out, "failed") {
		t.Fatalf("the one plan left:\n%s", out)
	}
}

func TestContextThroughServer(t *testing.T) {
	local, served := servedPair(t)
	stamps := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	norm := func(s string) string { return stamps.ReplaceAllString(s, "TIME") }
	sameThroughServer(t, local, served, norm,
		[]string{"context", "--session", "alice"}, []string{"context", "show", "--json", "--session", "alice"},
		[]string{"context", "add", "--session", "alice", "I'm", "flying", "to", "Osaka"},
		[]string{"context", "add", "--session", "alice", "--role", "assistant", "--json", "Have a good \u001b]0;x\u0007 trip"},
		[]string{"context", "add", "--session", "alice", ""},
		[]string{"context", "show", "--session", "alice"}, []string{"context", "--json", "--session", "alice"},
		[]string{"context", "show", "--session", "a/b"},
		[]string{"context", "show"},
		[]string{"context", "clear", "--session", "alice"}, []string{"context", "clear", "--json", "--session", "bob"},
		[]string{"context", "show", "--session", "alice"},
	)
}
