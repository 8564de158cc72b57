package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestMaintenanceProgress: CheckProgress, CompactProgress, BackupProgress and a cleanup's
// Progress report counts that grow and end done == total: records, bytes, memories.
func TestMaintenanceProgress(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	s := openTrashStore(t, t.TempDir(), func() time.Time { return now }, 0)
	defer s.Close()
	for i := range 300 {
		if _, err := s.Remember(ctx, "u", fmt.Sprintf("note %d about topic %d and %d", i, i%17, i%5), RememberOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 150 {
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	type report struct{ done, total int64 }
	collect := func(rs *[]report) func(done, total int64) {
		return func(done, total int64) { *rs = append(*rs, report{done, total}) }
	}
	check := func(name string, rs []report, min int64) {
		t.Helper()
		if len(rs) == 0 {
			t.Fatalf("%s: no progress", name)
		}
		for i, r := range rs {
			if r.done > r.total || (i > 0 && r.done < rs[i-1].done) {
				t.Fatalf("%s: report %d %+v (all %v)", name, i, r, rs)
			}
		}
		if last := rs[len(rs)-1]; last.done != last.total || last.total < min {
			t.Fatalf("%s: last report %+v, want done == total >= %d", name, last, min)
		}
	}
	var rs []report
	if err := s.CheckProgress(ctx, collect(&rs)); err != nil {
		t.Fatal(err)
	}
	check("check", rs, 300)
	rs = nil
	if err := s.CompactProgress(ctx, collect(&rs)); err != nil {
		t.Fatal(err)
	}
	check("compact", rs, 300)
	rs = nil
	if err := s.BackupProgress(ctx, filepath.Join(t.TempDir(), "b"), collect(&rs)); err != nil {
		t.Fatal(err)
	}
	check("backup", rs, 1000)
	rs = nil
	now = now.Add(400 * 24 * time.Hour)
	res, err := s.Cleanup(ctx, CleanupPolicy{Progress: collect(&rs)})
	if err != nil || len(res.Memories) != 300 {
		t.Fatalf("Cleanup: %d %v", len(res.Memories), err)
	}
	check("cleanup", rs, 300)
	if len(rs) < 3 {
		t.Fatalf("cleanup: %d reports, want one per batch of %d: %v", len(rs), cleanupBatch, rs)
	}
}
