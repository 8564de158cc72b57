package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/internal/vfs"
)

// memctlOn is memctl with the store's files on fsys.
func memctlOn(t *testing.T, fsys vfs.FS, dir string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, engineOpts: engine.Options{FS: fsys}}
	code := a.run(context.Background(), append([]string{"--dir", dir}, args...))
	return out.String(), errb.String(), code
}

// TestDiskFullExitCodes: on a full disk a command whose write fails exits
// non-zero saying why; one whose write went through but whose closing flush
// failed (seg/ full, the WAL not) exits non-zero too, instead of 0 with the
// error printed, and keeps the write (the WAL has it); once space is freed
// the next command succeeds and sees everything acknowledged.
func TestDiskFullExitCodes(t *testing.T) {
	isolate(t)
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "", "init")
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice keeps bees in the garden.")

	full := vfs.NewFull(vfs.OS)
	full.SetFull(true)
	if _, errOut, code := memctlOn(t, full, dir, "remember", "--session", "alice", "Alice's sister plays the cello."); code == exitOK ||
		!strings.Contains(errOut, "no space left on device") {
		t.Fatalf("remember on a full disk: exit %d, stderr %q", code, errOut)
	}
	// A recall answers (and exits 0); the access it could not record is a warning.
	if out, errOut, code := memctlOn(t, full, dir, "recall", "--session", "alice", "bees"); code != exitOK || !strings.Contains(out, "bees") ||
		!strings.Contains(errOut, "recording recall access statistics failed") {
		t.Fatalf("recall on a full disk: exit %d\n%s\n%s", code, out, errOut)
	}

	segFull := vfs.NewFull(vfs.OS)
	segFull.Match = string(filepath.Separator) + "seg" + string(filepath.Separator)
	segFull.SetFull(true)
	out, errOut, code := memctlOn(t, segFull, dir, "remember", "--session", "alice", "Alice flies to Lisbon in May.")
	if code == exitOK || !strings.HasPrefix(out, "remembered ") || !strings.Contains(errOut, "closing store") || !strings.Contains(errOut, "no space left on device") {
		t.Fatalf("remember whose closing flush fails: exit %d, stdout %q, stderr %q; want non-zero, the write reported and the close error", code, out, errOut)
	}
	if segFull.Failed() == 0 {
		t.Fatal("the closing flush wrote no segment: the test did not test")
	}

	full.SetFull(false) // space freed
	mustRun(t, dir, "", "remember", "--session", "alice", "Alice's sister plays the cello.")
	for _, q := range []string{"bees", "Lisbon", "cello"} {
		if out := mustRun(t, dir, "", "recall", "--session", "alice", q); !strings.Contains(out, q) {
			t.Fatalf("recall %q after space was freed:\n%s", q, out)
		}
	}
}
