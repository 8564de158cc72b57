package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// openRecordsStore opens an engine store in dir holding one conversation and one task.
func openRecordsStore(t *testing.T, dir string, write bool) *Store {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	s, err := Open(dir, OpenOptions{Options: Options{Clock: func() time.Time { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	if !write {
		return s
	}
	ctx := context.Background()
	if _, err := s.AddTurn(ctx, "alice", Turn{Role: "user", Text: "my flight is on 3 May"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTask(ctx, "job", "book the hotel"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBackupCarriesRecords: a backup holds the conversations and tasks, and check passes on it.
func TestBackupCarriesRecords(t *testing.T) {
	ctx := context.Background()
	s := openRecordsStore(t, t.TempDir(), true)
	defer s.Close()
	bdir := filepath.Join(t.TempDir(), "backup")
	if err := s.Backup(ctx, bdir); err != nil {
		t.Fatal(err)
	}
	b := openRecordsStore(t, bdir, false)
	defer b.Close()
	if err := b.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Context(ctx, "alice"); err != nil || len(c.Turns) != 1 || c.Turns[0].Text != "my flight is on 3 May" {
		t.Fatalf("backup conversation %+v, %v", c, err)
	}
	if tk, err := b.Task(ctx, "job"); err != nil || tk.Goal != "book the hotel" {
		t.Fatalf("backup task %+v, %v", tk, err)
	}
}

// TestCheckAndRepairRecords: a damaged records segment is found by Check, Repair moves it
// aside, and the store opens again with the rest intact.
func TestCheckAndRepairRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openRecordsStore(t, dir, true)
	if _, err := s.Remember(ctx, "alice", "alice likes green tea", RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The records were flushed first, alone: the first segment file is theirs.
	segs, err := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
	if err != nil || len(segs) < 2 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 3; i < len(b)/3+256; i++ { // past any alignment padding
		b[i] ^= 0xff
	}
	if err := os.WriteFile(segs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openRecordsStore(t, dir, false)
	if err := s.Check(ctx); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("check of a damaged records segment: %v", err)
	}
	_ = s.Close()
	rep, err := engine.Repair(dir, engine.Options{})
	if err != nil || len(rep.QuarantinedSegments) != 1 || rep.DroppedRecords != 2 {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	s = openRecordsStore(t, dir, false)
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("check after repair: %v", err)
	}
	if n, err := s.Count(ctx, nil); err != nil || n != 1 {
		t.Fatalf("memories after repair: %d, %v", n, err)
	}
	if c, err := s.Context(ctx, "alice"); err != nil || len(c.Turns) != 0 {
		t.Fatalf("conversation after repair: %+v, %v", c, err)
	}
	if _, err := s.AddTurn(ctx, "alice", Turn{Role: "user", Text: "again"}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFindsABadRecordPayload: a record whose payload is not the JSON of its kind fails Check.
func TestCheckFindsABadRecordPayload(t *testing.T) {
	ctx := context.Background()
	s := openRecordsStore(t, t.TempDir(), true)
	defer s.Close()
	c, err := s.b.Collection(ctx, RecordsCollection)
	if err != nil {
		t.Fatal(err)
	}
	m := Memory{ID: recordID(kindTask, "bad"), Source: kindTask, Text: "{not json", Importance: 1,
		Created: time.Unix(1, 0), Updated: time.Unix(1, 0), Vector: recordVector("x")}
	if err := c.Upsert(ctx, []Memory{m}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err == nil {
		t.Fatal("check passed a task record that is not JSON")
	}
}

func TestReservedCollectionNames(t *testing.T) {
	for _, name := range []string{RecordsCollection, "archive-0011"} {
		if _, err := Open(t.TempDir(), OpenOptions{Options: Options{Collection: name}}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("collection %q: %v", name, err)
		}
	}
}
