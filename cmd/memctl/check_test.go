package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/wal"
)

// storeHashes returns every entry under dir (files by size and content
// hash, LOCK included).
func storeHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = fmt.Sprintf("%d %s", len(b), hex.EncodeToString(sum[:8]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameHashes(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed (%q -> %q)", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}

// copyDir copies the files under src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// unflushedStore returns a store whose last memories are only in the WAL,
// as a process killed after acknowledging them leaves it: a copy of the
// directory taken while the store was open.
func unflushedStore(t *testing.T) string {
	t.Helper()
	isolate(t)
	live := filepath.Join(t.TempDir(), "live")
	mustRun(t, live, "", "remember", "--session", "s", "A flushed memory about the garden.")
	a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, dir: live, embedder: "lexical"}
	s, err := a.openStore()
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"The WAL holds this memory about tea.", "And this one about the harbour.", "And a third about the night train."} {
		if _, err := s.Remember(context.Background(), "s", text, memory.RememberOptions{}); err != nil {
			t.Fatalf("remember %d: %v", i, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "store")
	copyDir(t, live, dir)
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// lastWALRecord returns the newest WAL segment of the store in dir and
// the byte range of its last record.
func lastWALRecord(t *testing.T, dir string) (string, int64, int64) {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(dir, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	var seg uint32
	for _, n := range names {
		if s, ok := wal.ParseSegmentName(n.Name()); ok {
			seg = max(seg, s)
		}
	}
	path := filepath.Join(dir, "wal", fmt.Sprintf("%08d", seg))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := wal.NewReader(bytes.NewReader(b), int64(len(b)), seg)
	var last wal.LSN
	for r.Next() {
		last = r.LSN()
	}
	if r.Err() != nil || last == 0 {
		t.Fatalf("reading %s: %v (last %v)", path, r.Err(), last)
	}
	return path, last.Offset(), r.IntactEnd()
}

// TestCheckWritesNothing: `memctl check` is read-only (issue 23). On a
// store with memories only in the WAL, a foreign file and a file named
// like a WAL segment that is not one, every file hashes the same after
// check, which says what a writable open would do; the memories are all
// there afterwards. Before, check replayed the WAL, flushed a segment,
// wrote a manifest and removed the fallback.
func TestCheckWritesNothing(t *testing.T) {
	dir := unflushedStore(t)
	before := storeHashes(t, dir)
	if out := mustRun(t, dir, "", "check"); !strings.Contains(out, "3 WAL records written after the last flush were replayed in memory only") {
		t.Errorf("check output:\n%s", out)
	}
	sameHashes(t, before, storeHashes(t, dir))
	if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 5000)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range junk {
		junk[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "wal", "00000009"), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	before = storeHashes(t, dir)
	out := mustRun(t, dir, "", "check")
	sameHashes(t, before, storeHashes(t, dir))
	for _, want := range []string{"unknown notes", "unknown wal/00000009", "would set aside wal/00000009",
		"WAL records written after the last flush were replayed in memory only", "\nok\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	for _, q := range []string{"tea", "harbour", "night train", "garden"} {
		if got := mustRun(t, dir, "", "recall", "--session", "s", q); !strings.Contains(got, q) {
			t.Fatalf("memory about %s lost:\n%s", q, got)
		}
	}
	if out := mustRun(t, dir, "", "check"); strings.Contains(out, "would") {
		t.Fatalf("check after a writable open still has work to report:\n%s", out)
	}
}

// TestCheckReportsDamagedLastWALRecord: one flipped byte in the middle of
// the last acknowledged WAL record (issue 23). Before, check said ok,
// export exited 0 and repair found the store healthy while the memory was
// gone. Now check fails without changing a file, and repair gives up that
// record only, keeping its bytes.
func TestCheckReportsDamagedLastWALRecord(t *testing.T) {
	dir := unflushedStore(t)
	path, start, end := lastWALRecord(t, dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[(start+end)/2] ^= 0x20
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := storeHashes(t, dir)
	_, errOut, code := memctl(t, dir, "", "check")
	if code != exitFailed || !strings.Contains(errOut, "damaged, not torn") {
		t.Fatalf("check: exit %d, %q", code, errOut)
	}
	sameHashes(t, before, storeHashes(t, dir))
	if _, _, code := memctl(t, dir, "", "export"); code == exitOK {
		t.Fatal("export passed over a lost memory")
	}
	out := mustRun(t, dir, "", "repair")
	if !strings.Contains(out, "WAL damaged at") || !strings.Contains(out, ".lost") {
		t.Fatalf("repair:\n%s", out)
	}
	mustRun(t, dir, "", "check")
	for _, q := range []string{"tea", "harbour", "garden"} {
		if got := mustRun(t, dir, "", "recall", "--session", "s", q); !strings.Contains(got, q) {
			t.Fatalf("memory about %s lost:\n%s", q, got)
		}
	}
}
