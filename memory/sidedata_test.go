package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestManifestDoesNotGrowWithTheArchive archives memories carrying 1024-d vectors and checks
// that the engine's MANIFEST stays small: the archive lives in segments, not in the KV
// namespace that the manifest carries whole (with the first-release layout 2,000 archived
// memories made a manifest of 377 KB, now 274 bytes). ENGRAM_ARCHIVE_N raises the count (20000 in the issue).
func TestManifestDoesNotGrowWithTheArchive(t *testing.T) {
	n := 2000
	if v := os.Getenv("ENGRAM_ARCHIVE_N"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	s, err := Open(dir, OpenOptions{Options: Options{Clock: func() time.Time { return now }, DedupThreshold: -1},
		Engine: engine.Options{UnsafeNoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	_, emb, _ := s.current()
	const batch = 500
	for i := 0; i < n; i += batch {
		var ms []Memory
		var texts []string
		for j := i; j < min(i+batch, n); j++ {
			texts = append(texts, fmt.Sprintf("memory %d about topic %d and item %d", j, j%97, j%13))
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for j, tx := range texts {
			ms = append(ms, Memory{ID: fmt.Sprintf("m%06d", i+j), Session: "s", Text: tx, Vector: vecs[j], Importance: 0.5, Created: now, Updated: now})
		}
		if err := s.Import(ctx, ms); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(365 * 24 * time.Hour)
	res, err := s.Cleanup(ctx, CleanupPolicy{})
	if err != nil || len(res.Memories) != n {
		t.Fatalf("cleanup: %d, %v", len(res.Memories), err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(currentManifest(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d archived memories: MANIFEST %d bytes", n, fi.Size())
	if limit := int64(16<<10 + 4*n); fi.Size() > limit {
		t.Fatalf("MANIFEST of %d bytes after archiving %d memories, want at most %d", fi.Size(), n, limit)
	}
	if got, err := s.Archived(ctx); err != nil || len(got) != n {
		t.Fatalf("archived %d, %v", len(got), err)
	}
}

// TestManifestDoesNotGrowWithRecords writes many conversations and tasks and checks that the
// MANIFEST stays small (they are records in segments, not KV values) and that they read back
// after a reopen. ENGRAM_RECORDS_N raises the count of sessions and tasks.
func TestManifestDoesNotGrowWithRecords(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	if v := os.Getenv("ENGRAM_RECORDS_N"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	opts := OpenOptions{Options: Options{Clock: func() time.Time { return now }}, Engine: engine.Options{UnsafeNoSync: true}}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	for i := range n {
		for j := range 3 {
			if _, err := s.AddTurn(ctx, fmt.Sprintf("session-%05d", i), Turn{Role: "user", Text: fmt.Sprintf("turn %d of session %d: the meeting moved to room %d", j, i, i%50)}); err != nil {
				t.Fatal(err)
			}
		}
		id := fmt.Sprintf("task-%05d", i)
		if _, err := s.StartTask(ctx, id, fmt.Sprintf("goal number %d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateStep(ctx, id, Step{Name: "fetch", Status: StepDone, Result: []byte(fmt.Sprintf(`{"rows":%d}`, i))}, "parse"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wrote := time.Since(start)
	fi, err := os.Stat(currentManifest(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d conversations (3 turns) and %d tasks written in %v: MANIFEST %d bytes", n, n, wrote, fi.Size())
	if limit := int64(16<<10 + 8*n); fi.Size() > limit {
		t.Fatalf("MANIFEST of %d bytes with %d conversations and tasks, want at most %d", fi.Size(), n, limit)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Context(ctx, fmt.Sprintf("session-%05d", n-1))
	if err != nil || len(c.Turns) != 3 || !strings.Contains(c.Turns[2].Text, fmt.Sprintf("room %d", (n-1)%50)) {
		t.Fatalf("conversation after reopen: %+v, %v", c, err)
	}
	tk, err := s.Task(ctx, "task-00000")
	if err != nil || tk.Next != "parse" || string(tk.Steps[0].Result) != `{"rows":0}` {
		t.Fatalf("task after reopen: %+v, %v", tk, err)
	}
	tasks, err := s.Tasks(ctx)
	if err != nil || len(tasks) != n || tasks[0].ID != "task-00000" || tasks[n-1].ID != fmt.Sprintf("task-%05d", n-1) {
		t.Fatalf("Tasks: %d, %v", len(tasks), err)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Tasks != n || st.Memories != 0 {
		t.Fatalf("Stats: %+v, %v", st, err)
	}
}

// currentManifest returns the path of the engine's newest manifest, which
// CURRENT names.
func currentManifest(t *testing.T, dir string) string {
	t.Helper()
	cur, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, strings.TrimSpace(string(cur)))
}
