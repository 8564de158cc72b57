package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestContextCommands(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "init")
	if out := mustRun(t, dir, "", "context", "--session", "alice"); !strings.Contains(out, "(no conversation in session alice)") {
		t.Fatalf("empty context: %q", out)
	}
	if out := mustRun(t, dir, "", "--json", "context", "show", "--session", "alice"); !strings.Contains(out, `"turns": []`) {
		t.Fatalf("empty context JSON: %q", out)
	}
	for i := range 12 {
		mustRun(t, dir, "", "--short-term-tokens", "80", "context", "add", "--session", "alice", "--role", []string{"user", "assistant"}[i%2],
			fmt.Sprintf("Okay. Locker %d has the code %d.", i, 7000+i))
	}
	mustRun(t, dir, "Bob lives in Oslo.", "context", "add", "--session", "bob", "-")
	var c struct {
		Summary    string `json:"summary"`
		Compressed int    `json:"compressed"`
		Turns      []struct{ Role, Text string }
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "--json", "context", "--session", "alice")), &c); err != nil {
		t.Fatal(err)
	}
	if c.Compressed == 0 || c.Compressed+len(c.Turns) != 12 || !strings.Contains(c.Summary, "7000") || strings.Contains(c.Summary, "Oslo") {
		t.Fatalf("context after 12 turns with a budget of 80: %+v", c)
	}
	if out := mustRun(t, dir, "", "context", "--session", "alice"); !strings.Contains(out, fmt.Sprintf("summary of %d earlier turns", c.Compressed)) || !strings.Contains(out, "7011") {
		t.Fatalf("context show:\n%s", out)
	}
	mustRun(t, dir, "", "context", "clear", "--session", "alice")
	if out := mustRun(t, dir, "", "context", "--session", "alice"); !strings.Contains(out, "(no conversation") {
		t.Fatalf("after clear: %q", out)
	}
	if out := mustRun(t, dir, "", "context", "--session", "bob"); !strings.Contains(out, "Oslo") {
		t.Fatalf("bob's context: %q", out)
	}
	for _, args := range [][]string{
		{"context"},                   // no session
		{"context", "add", "-s", "x"}, // no text
		{"--summarizer", "gpt", "context", "-s", "x"},
		{"--short-term-tokens", "-5", "context", "-s", "x"},
	} {
		if _, _, code := memctl(t, dir, "", args...); code != exitUsage {
			t.Errorf("memctl %q: exit %d, want %d", args, code, exitUsage)
		}
	}
}
