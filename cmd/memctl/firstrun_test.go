package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newUser gives the test a fresh home directory and nothing else: no XDG
// variables, no ENGRAM_ settings, so every default is the one a new user's
// machine has.
func newUser(t *testing.T) string {
	t.Helper()
	isolate(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	return home
}

// asUser runs memctl the way a person types it: no --dir.
func asUser(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func mustAsUser(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := asUser(t, args...)
	if code != exitOK {
		t.Fatalf("memctl %q: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// TestFirstRun reproduces issue 23: `memctl quickstart` wrote its store to
// ~/.local/share/engram/quickstart, inside the default --dir, after which
// the README's first command (`memctl remember --session alice "Alice
// prefers green tea"`) failed, as did the `memctl init` the error
// suggested; with a store first and the quickstart after, `check` reported
// the quickstart directory as an unknown file. The quickstart now keeps its
// store beside the default one, so the README's commands work in either
// order on a fresh machine.
func TestFirstRun(t *testing.T) {
	readme := func(t *testing.T) {
		t.Helper()
		// A second run merges into the first memory (a near-duplicate).
		if out := mustAsUser(t, "remember", "--session", "alice", "Alice prefers green tea"); !strings.HasPrefix(out, "remembered ") && !strings.HasPrefix(out, "merged into ") {
			t.Fatalf("remember: %q", out)
		}
		out := mustAsUser(t, "recall", "--session", "alice", "--explain", "what does Alice drink?")
		if !strings.Contains(out, "Alice prefers green tea") {
			t.Fatalf("recall:\n%s", out)
		}
	}
	quickstart := func(t *testing.T, home string) {
		t.Helper()
		out := mustAsUser(t, "quickstart")
		want := filepath.Join(home, ".local", "share", "engram-quickstart")
		if !strings.Contains(out, "The store is in "+want+".") {
			t.Errorf("quickstart's store is not %s:\n%s", want, out[strings.Index(out, "The store is in"):])
			return
		}
		// Its store is its own: what it says to try works.
		if out := mustAsUser(t, "recall", "--dir", want, "--session", "alice", "meetup talk"); !strings.Contains(out, "Berlin meetup") {
			t.Fatalf("recall in the quickstart's store:\n%s", out)
		}
	}
	check := func(t *testing.T) {
		t.Helper()
		if out := mustAsUser(t, "check"); out != "ok\n" {
			t.Fatalf("check on the default store: %q", out)
		}
	}

	t.Run("quickstart then the README", func(t *testing.T) {
		home := newUser(t)
		quickstart(t, home)
		readme(t)
		check(t)
		// The default store holds the user's memory only, not the demo's.
		if out := mustAsUser(t, "sessions"); strings.Contains(out, "bob") {
			t.Fatalf("the demo's sessions are in the default store:\n%s", out)
		}
	})
	t.Run("the README then quickstart", func(t *testing.T) {
		home := newUser(t)
		readme(t)
		quickstart(t, home)
		check(t)
		readme(t)
	})
	t.Run("init after quickstart", func(t *testing.T) {
		home := newUser(t)
		quickstart(t, home)
		mustAsUser(t, "init")
		check(t)
	})
	t.Run("a demo store left inside the default store by an older quickstart", func(t *testing.T) {
		home := newUser(t)
		def := filepath.Join(home, ".local", "share", "engram")
		mustAsUser(t, "quickstart", "--dir", filepath.Join(def, "quickstart"))
		_, errOut, code := asUser(t, "remember", "--session", "alice", "Alice prefers green tea")
		mv := "mv " + filepath.Join(def, "quickstart") + " " + def + "-quickstart"
		if code != exitFailed || !strings.Contains(errOut, mv) {
			t.Fatalf("remember beside an old demo store: exit %d, %q; want the hint %q", code, errOut, mv)
		}
		if err := os.Rename(filepath.Join(def, "quickstart"), def+"-quickstart"); err != nil {
			t.Fatal(err)
		}
		readme(t)
		quickstart(t, home)
		check(t)
	})
	t.Run("a store named in the config file", func(t *testing.T) {
		home := newUser(t)
		store := filepath.Join(home, "mystore")
		cfg := filepath.Join(home, ".config", "engram", "config.json")
		if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(`{"dir": "`+store+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		readme(t)
		quickstart(t, home)
		if _, err := os.Stat(filepath.Join(store, "quickstart")); err == nil {
			t.Fatal("quickstart wrote into the configured store")
		}
		check(t)
	})
}
