package memory

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

func openTrashStore(t *testing.T, dir string, clock func() time.Time, retention time.Duration) *Store {
	t.Helper()
	s, err := Open(dir, OpenOptions{Options: Options{Clock: clock, DedupThreshold: -1, ForgetRetention: retention},
		Engine: engine.Options{UnsafeNoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestForgetThenUnforget: with a retention, forgetting moves a memory to the trash and Unforget
// brings back the same ID, text, metadata, timestamps, vector and history; Purge and the end of
// the retention delete for good (history included); without a retention forgetting is final.
func TestForgetThenUnforget(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	clock := func() time.Time { return now }
	dir := t.TempDir()
	s := openTrashStore(t, dir, clock, 24*time.Hour)
	r, err := s.Remember(ctx, "alice", "alice keeps bees on the roof", RememberOptions{Source: "chat", Tags: []string{"hobby"},
		Importance: 0.7, Metadata: map[string]any{"room": "roof", "hives": 3.0}})
	if err != nil {
		t.Fatal(err)
	}
	id := r.IDs[0]
	text := "alice keeps two hives of bees on the roof"
	if _, err := s.Update(ctx, id, UpdateOptions{Text: &text}); err != nil {
		t.Fatal(err)
	}
	other, err := s.Remember(ctx, "bob", "bob likes chess", RememberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.Lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	now = now.Add(time.Minute)
	if n, err := s.Forget(ctx, id, "no-such-id"); err != nil || n != 1 {
		t.Fatalf("Forget: %d %v", n, err)
	}
	if _, err := s.Lookup(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup after Forget: %v", err)
	}
	res, err := s.Recall(ctx, "bees on the roof", RecallOptions{Session: "alice"})
	if err != nil || len(res) != 0 {
		t.Fatalf("Recall after Forget: %v %v", res, err)
	}
	fs, err := s.Forgotten(ctx)
	if err != nil || len(fs) != 1 || fs[0].ID != id || fs[0].Text != text {
		t.Fatalf("Forgotten: %+v %v", fs, err)
	}
	if !fs[0].Forgotten.Equal(now) || !fs[0].PurgeAfter.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("times: forgotten %v purge %v", fs[0].Forgotten, fs[0].PurgeAfter)
	}
	if _, ok := fs[0].Metadata[metaForgottenAt]; ok || fs[0].Metadata["room"] != "roof" {
		t.Fatalf("metadata of the forgotten memory: %v", fs[0].Metadata)
	}
	if st, err := s.Stats(ctx); err != nil || st.Forgotten != 1 || st.Memories != 1 {
		t.Fatalf("Stats: %+v %v", st, err)
	}
	if vs, err := s.History(ctx, id); err != nil || len(vs) != 1 {
		t.Fatalf("History of a forgotten memory: %v %v", vs, err)
	}

	if _, err := s.Unforget(ctx, id, "no-such-id"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Unforget of an unknown ID: %v", err)
	}
	if n, err := s.Unforget(ctx, id); err != nil || n != 1 {
		t.Fatalf("Unforget: %d %v", n, err)
	}
	after, err := s.Lookup(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Text != before.Text || after.Session != before.Session || after.Source != before.Source ||
		!slices.Equal(after.Tags, before.Tags) || after.Importance != before.Importance ||
		!after.Created.Equal(before.Created) || !after.Updated.Equal(before.Updated) ||
		len(after.Metadata) != 2 || after.Metadata["hives"] != 3.0 || !slices.Equal(after.Vector, before.Vector) {
		t.Fatalf("restored\n%+v\nwant\n%+v", after, before)
	}
	if vs, err := s.History(ctx, id); err != nil || len(vs) != 1 {
		t.Fatalf("History after Unforget: %v %v", vs, err)
	}
	if fs, _ := s.Forgotten(ctx); len(fs) != 0 {
		t.Fatalf("trash after Unforget: %v", fs)
	}

	// Purge: gone for good, from the trash too, history included.
	if n, err := s.ForgetWhere(ctx, Eq(FieldSession, "alice")); err != nil || n != 1 {
		t.Fatalf("ForgetWhere: %d %v", n, err)
	}
	if n, err := s.Purge(ctx, id); err != nil || n != 1 {
		t.Fatalf("Purge: %d %v", n, err)
	}
	if _, err := s.History(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("History after Purge: %v", err)
	}
	if _, err := s.Unforget(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Unforget after Purge: %v", err)
	}

	// The retention ends: the next open purges, whatever its own retention.
	if err := s.Delete(ctx, other.IDs[0]); err != nil {
		t.Fatal(err)
	}
	if fs, _ := s.Forgotten(ctx); len(fs) != 1 {
		t.Fatalf("trash after Delete: %v", fs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(25 * time.Hour)
	s = openTrashStore(t, dir, clock, 0)
	if st, err := s.Stats(ctx); err != nil || st.Forgotten != 0 || st.Memories != 0 {
		t.Fatalf("Stats after the retention: %+v %v", st, err)
	}
	if _, err := s.Unforget(ctx, other.IDs[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Unforget after the retention: %v", err)
	}

	// Without a retention forgetting is final.
	r, err = s.Remember(ctx, "carol", "carol is final", RememberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Forget(ctx, r.IDs[0]); err != nil || n != 1 {
		t.Fatalf("Forget: %d %v", n, err)
	}
	if fs, _ := s.Forgotten(ctx); len(fs) != 0 {
		t.Fatalf("trash without a retention: %v", fs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPurgeWhereReachesTrashAndArchive: PurgeWhere and PurgeForgotten delete what a session
// left in the trash and the archive, not only its live memories.
func TestPurgeWhereReachesTrashAndArchive(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	s := openTrashStore(t, t.TempDir(), func() time.Time { return now }, time.Hour)
	defer s.Close()
	var ids []string
	for _, text := range []string{"old note about tea", "note about coffee", "note about water"} {
		r, err := s.Remember(ctx, "u", text, RememberOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.IDs[0])
	}
	now = now.Add(200 * 24 * time.Hour)
	if res, err := s.Cleanup(ctx, CleanupPolicy{}); err != nil || len(res.Memories) != 3 {
		t.Fatalf("Cleanup: %v %v", res, err)
	}
	if n, err := s.Restore(ctx, ids[1], ids[2]); err != nil || n != 2 {
		t.Fatalf("Restore: %d %v", n, err)
	}
	if n, err := s.Forget(ctx, ids[1]); err != nil || n != 1 {
		t.Fatalf("Forget: %d %v", n, err)
	}
	// ids[0] archived, ids[1] forgotten, ids[2] live.
	if n, err := s.PurgeWhere(ctx, Eq(FieldSession, "u")); err != nil || n != 3 {
		t.Fatalf("PurgeWhere: %d %v", n, err)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Memories+st.Archived+st.Forgotten != 0 {
		t.Fatalf("Stats after PurgeWhere: %+v %v", st, err)
	}
	r, err := s.Remember(ctx, "u", "one more", RememberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, r.IDs[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeForgotten(ctx); err != nil || n != 1 {
		t.Fatalf("PurgeForgotten: %d %v", n, err)
	}
	if _, err := s.PurgeWhere(ctx, nil); !errors.Is(err, ErrInvalidFilter) {
		t.Fatalf("PurgeWhere(nil): %v", err)
	}
}
