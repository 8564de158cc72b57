package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/lexical"
)

// evil is stored text that would clear and recolour a terminal (ESC[2J,
// ESC[31m), start a C1 control sequence (U+009B is CSI), reorder the line
// (U+202E), ring the bell, return the carriage and delete.
const evil = "red \x1b[2J\x1b[31m alert \u009b31m \u202egnp.exe bell\a cr\rover del\x7f end"

// oldEvil is a year old, so cleanup archives it.
const oldEvil = "Quarterly backups of the Lisbon office \x1b[2J\x1b[5m were rotated"

const evilSession = "ev\x1b]0;owned\x07il\nsession"

// rawControl reports the first terminal control in out that sanitize should
// have escaped.
func rawControl(out string) (string, bool) {
	for _, bad := range []string{"\x1b", "\a", "\r", "\x7f", "\u009b", "\u202e"} {
		if strings.Contains(out, bad) {
			return bad, true
		}
	}
	return "", false
}

// seedEvil stores evil in a store at dir: one memory now, one a year old
// (for cleanup and the archive), and a task.
func seedEvil(t *testing.T, dir string) {
	t.Helper()
	emb, _ := lexical.New(lexical.Options{})
	s, err := memory.Open(dir, memory.OpenOptions{Options: memory.Options{Embedder: emb}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Remember(ctx, evilSession, evil, memory.RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, evilSession, oldEvil, memory.RememberOptions{Time: time.Now().Add(-400 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTask(ctx, "job\x1b[2J", evil); err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(evil)
	if _, err := s.UpdateStep(ctx, "job\x1b[2J", memory.Step{Name: "step\x1b[31m", Status: memory.StepDone, Result: result}, "next\u202e"); err != nil {
		t.Fatalf("step: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOutputHygiene reproduces a stored ESC[2J ESC[31m clearing and
// recolouring the terminal in recall and sessions: no command prints a raw
// control character from stored data, each is escaped visibly, and --json
// (and export) stay exact.
func TestOutputHygiene(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	seedEvil(t, dir)
	keys := filepath.Join(t.TempDir(), "keys.json")
	mustRun(t, dir, "", "keys", "add", "evil", "--keys", keys, "--sessions", "ev\x1b[2J*")
	for _, tc := range []struct {
		args    []string
		visible string // an escape the output must show, if any
	}{
		{[]string{"recall", "--session", evilSession, "alert"}, `\x1b[2J`},
		{[]string{"recall", "--session", evilSession, "--explain", "alert"}, `\x1b[2J`},
		{[]string{"recall", "--session", evilSession, "--prompt", "alert"}, `\x1b[2J`},
		{[]string{"sessions"}, `ev\x1b]0;owned\x07il\nsession`},
		{[]string{"tasks"}, `job\x1b[2J`},
		{[]string{"tasks", "list"}, `job\x1b[2J`},
		{[]string{"tasks", "show", "job\x1b[2J"}, `step\x1b[31m`},
		{[]string{"tasks", "step", "job\x1b[2J", "again\x1b[1m", "--next", "n\x1b[5m"}, `again\x1b[1m`},
		{[]string{"tasks", "start", "fresh", "--goal", evil}, `\x1b[2J`},
		{[]string{"tasks", "finish", "fresh"}, `\x1b[2J`},
		{[]string{"tasks", "show", "nonexistent\x1b[2J"}, ""},
		{[]string{"stats"}, ""},
		{[]string{"check"}, ""},
		{[]string{"cleanup", "--dry-run", "--older-than", "30d"}, `\x1b[2J`},
		{[]string{"cleanup", "--older-than", "30d"}, `\x1b[2J`},
		{[]string{"archive", "list"}, `\x1b[2J`},
		{[]string{"archive"}, ""},
		{[]string{"keys", "list", "--keys", keys}, `ev\x1b[2J*`},
		{[]string{"forget", "--session", evilSession, "--all"}, ""},
		{[]string{"tasks", "delete", "job\x1b[2J"}, `job\x1b[2J`},
	} {
		out, errOut, _ := memctl(t, dir, "", tc.args...)
		if bad, ok := rawControl(out + errOut); ok {
			t.Errorf("memctl %q prints a raw %q:\n%s%s", tc.args, bad, out, errOut)
		}
		if tc.visible != "" && !strings.Contains(out, tc.visible) {
			t.Errorf("memctl %q does not show %s:\n%s%s", tc.args, tc.visible, out, errOut)
		}
	}
}

// TestJSONStaysExact: --json and export print stored text byte for byte
// (JSON escapes the controls itself), so scripts see the exact data.
func TestJSONStaysExact(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	seedEvil(t, dir)
	var rec recallOutput
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "recall", "--json", "--session", evilSession, "alert")), &rec); err != nil {
		t.Fatal(err)
	}
	results := rec.Results
	if len(results) == 0 || results[0].Session != evilSession || results[0].Text != evil {
		t.Fatalf("recall --json = %+v", results)
	}
	var sessions []struct{ Name string }
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "sessions", "--json")), &sessions); err != nil || len(sessions) != 1 || sessions[0].Name != evilSession {
		t.Fatalf("sessions --json = %+v, %v", sessions, err)
	}
	var task memory.Task
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "tasks", "show", "--json", "job\x1b[2J")), &task); err != nil || task.Goal != evil || task.Next != "next\u202e" {
		t.Fatalf("tasks show --json = %+v, %v", task, err)
	}
	export := mustRun(t, dir, "", "export")
	sc := bufio.NewScanner(strings.NewReader(export))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var m struct {
			Text, Session string
			Task          *memory.Task
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m.Task != nil {
			if m.Task.Goal != evil {
				t.Fatalf("exported task goal %q", m.Task.Goal)
			}
			continue
		}
		if m.Text == "" && m.Session == "" {
			continue // another kind of line (a conversation)
		}
		if m.Session != evilSession || (m.Text != evil && m.Text != oldEvil) {
			t.Fatalf("export line %q", sc.Text())
		}
		n++
	}
	if n != 2 {
		t.Fatalf("export wrote %d memories", n)
	}
	// A C1 control is raw UTF-8 in JSON (encoding/json does not escape it):
	// exact means it is still there.
	if !strings.Contains(export, "\u009b") {
		t.Fatal("export escaped U+009B: not exact")
	}
}

func TestTermWriter(t *testing.T) {
	var b bytes.Buffer
	w := &termWriter{w: &b}
	// A rune split across writes, and a JSON document passing through.
	for _, p := range []string{"a\x1bb\t", "\xe2\x80", "\xae|", "\xc2", "\x9b|ok 🎉\n", `{"t":"\u001b"}`, "\xff"} {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	w.Write([]byte("\xe2"))
	w.Close()
	if got, want := b.String(), `a\x1bb`+"\t"+`\u202e|\u009b|ok 🎉`+"\n"+`{"t":"\u001b"}\xff\xe2`; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	for in, want := range map[string]string{
		"plain 中文 🎉":  "plain 中文 🎉",
		"a\x1b[2Jb":   `a\x1b[2Jb`,
		"l1\nl2\tx":   `l1\nl2\tx`,
		"\u202eabc":   `\u202eabc`,
		"bad\xffutf8": `bad\xffutf8`,
		"c1\u0085":    `c1\u0085`,
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRememberEdgeFiles reproduces `memctl remember --file` exiting 1 on a
// 200 KB text without spaces; emoji and punctuation alone work too.
func TestRememberEdgeFiles(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	for _, text := range []string{strings.Repeat("x", 200<<10), "🎉", "+", "..."} {
		file := filepath.Join(t.TempDir(), "text")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		mustRun(t, dir, "", "remember", "--session", "edge", "--file", file)
		query := text
		if len(query) > 1000 {
			query = query[:1000]
		}
		var rec recallOutput
		if err := json.Unmarshal([]byte(mustRun(t, dir, "", "recall", "--json", "--session", "edge", "--", query)), &rec); err != nil {
			t.Fatal(err)
		}
		results := rec.Results
		if len(results) == 0 || !strings.HasPrefix(results[0].Text, text[:min(len(text), 100)]) {
			t.Errorf("recall %.10q: %d results", text, len(results))
		}
	}
}
