package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds every kind of character a terminal acts on that JSON itself
// leaves raw: C1 controls (U+009B is CSI), NEL, DEL, the bidirectional
// embeddings, overrides, isolates and marks, and the line and paragraph
// separators; plus C0 (ESC), which JSON escapes anyway.
const hostile = "tea\u009b31m\u0085\u007f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u2028\u2029\x1b[2J\u0080\u009f end"

// TestJSONEscapesTerminalControls: --json output passed C1 controls, NEL,
// DEL and bidi overrides through raw in recall, list, get, history and
// sessions (issue 23), so a script that printed a field, or a person who
// ran the command in a terminal, got the terminal driven by stored text.
// Every such character is now a \u escape: the output is plain printable
// text, still valid JSON, and decodes to the stored string exactly.
func TestJSONEscapesTerminalControls(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	session := "eve" + hostile
	text := "Eve drinks green tea " + hostile
	var rem []rememberOutput
	if err := json.Unmarshal([]byte(mustRun(t, dir, "", "remember", "--json", "--session", session, "--tag", hostile, text)), &rem); err != nil || len(rem) != 1 {
		t.Fatalf("remember --json: %v %+v", err, rem)
	}
	id := rem[0].ID
	mustRun(t, dir, "", "update", id, "--text", text+" and coffee")
	for _, args := range [][]string{
		{"recall", "--session", session, "green tea"},
		{"list", "--session", session},
		{"get", id},
		{"history", id},
		{"sessions"},
	} {
		out := mustRun(t, dir, "", append(args, "--json")...)
		if r, ok := rawTerminalRune(out); ok {
			t.Errorf("%s --json writes %U raw:\n%q", args[0], r, out)
		}
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%s --json is not JSON: %v\n%s", args[0], err, out)
			continue
		}
		if !containsString(v, hostile) {
			t.Errorf("%s --json does not decode to the stored text:\n%s", args[0], out)
		}
	}
}

// rawTerminalRune returns the first rune of s, other than newline, that a
// terminal acts on: a control (C0, DEL, C1) or a bidi or separator
// character sanitize escapes.
func rawTerminalRune(s string) (rune, bool) {
	for _, r := range s {
		if r == '\n' {
			continue
		}
		if r < 0x20 || r == 0x7f || unsafeRune(r) || r == utf8.RuneError {
			return r, true
		}
	}
	return 0, false
}

// containsString reports whether a decoded JSON value holds a string that
// contains want.
func containsString(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, want)
	case []any:
		for _, x := range v {
			if containsString(x, want) {
				return true
			}
		}
	case map[string]any:
		for k, x := range v {
			if strings.Contains(k, want) || containsString(x, want) {
				return true
			}
		}
	}
	return false
}

func TestWriteJSONEscapes(t *testing.T) {
	for _, s := range []string{"", "plain", hostile, "日本語 🙂", "\u00a0\u0100"} {
		var b strings.Builder
		a := &app{stdout: &b}
		if err := a.printJSON(map[string]string{"k": s}); err != nil {
			t.Fatal(err)
		}
		if r, ok := rawTerminalRune(b.String()); ok {
			t.Errorf("%q: %U raw in %q", s, r, b.String())
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back["k"] != s {
			t.Errorf("%q: decodes to %q, %v", s, back["k"], err)
		}
		if s == "日本語 🙂" && !strings.Contains(b.String(), s) {
			t.Errorf("printable text was escaped: %s", b.String())
		}
	}
}
