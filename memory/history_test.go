package memory

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestManifestDoesNotGrowWithTheHistory updates memories many times on the engine backend and
// checks that the MANIFEST stays small and the versions survive a reopen: the history lives in
// a collection's segments, not in the KV namespace that the manifest carries whole.
func TestManifestDoesNotGrowWithTheHistory(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	opts := OpenOptions{Options: Options{Clock: func() time.Time { return now }, DedupThreshold: -1}, Engine: engine.Options{UnsafeNoSync: true}}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const memories, updates = 50, 20
	var ids []string
	for i := range memories {
		r, err := s.Remember(ctx, "s", fmt.Sprintf("memory %d, version 0, about topic %d", i, i%7), RememberOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.IDs[0])
	}
	for v := 1; v <= updates; v++ {
		now = now.Add(time.Minute)
		for i, id := range ids {
			text := fmt.Sprintf("memory %d, version %d, about topic %d", i, v, i%7)
			if _, err := s.Update(ctx, id, UpdateOptions{Text: &text}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(currentManifest(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d versions: MANIFEST %d bytes", memories*updates, fi.Size())
	if fi.Size() > 16<<10 {
		t.Fatalf("MANIFEST of %d bytes after %d versions", fi.Size(), memories*updates)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	vs, err := s.History(ctx, ids[7])
	if err != nil || len(vs) != DefaultHistoryVersions || vs[0].Version != 1 || vs[len(vs)-1].Memory.Text != "memory 7, version 19, about topic 0" {
		t.Fatalf("history after reopen: %d versions, %v: %+v", len(vs), err, vs[len(vs)-1])
	}
}
