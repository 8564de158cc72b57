package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestTimeBoundaries: the memory layer keeps engine.MinTime..MaxTime exactly
// through a flush and a reopen and refuses times outside (Remember,
// Import, turns, tasks, time filters) with a clear error instead of
// letting them wrap (9999-12-31 used to come back as 1816-03-30).
func TestTimeBoundaries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openRecordsStore(t, dir, false)
	far := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	early := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{far, early, engine.MaxTime.Add(1)} {
		if _, err := s.Remember(ctx, "alice", "a memory from far away", RememberOptions{Time: at}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("Remember at %v = %v, want ErrInvalidInput", at, err)
		}
		m := Memory{ID: "m1", Session: "alice", Text: "imported", Importance: 0.5, Created: at, Updated: engine.MaxTime}
		if err := s.Import(ctx, []Memory{m}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("Import created %v = %v, want ErrInvalidInput", at, err)
		}
		if _, err := s.AddTurn(ctx, "alice", Turn{Role: "user", Text: "hi", Time: at}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("AddTurn at %v = %v, want ErrInvalidInput", at, err)
		}
		if err := s.ImportTask(ctx, Task{ID: "t", Session: "alice", Status: TaskActive, Created: at, Updated: at}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("ImportTask at %v = %v, want ErrInvalidInput", at, err)
		}
		if _, err := s.Count(ctx, TimeRange(FieldCreated, time.Time{}, at)); !errors.Is(err, ErrInvalidFilter) {
			t.Fatalf("TimeRange to %v = %v, want ErrInvalidFilter", at, err)
		}
	}
	if n, err := s.Count(ctx, nil); err != nil || n != 0 {
		t.Fatalf("refused writes left %d memories, %v", n, err)
	}
	// The edges themselves are kept exactly.
	res, err := s.Remember(ctx, "alice", "the last storable instant", RememberOptions{Time: engine.MaxTime})
	if err != nil {
		t.Fatal(err)
	}
	in := []Memory{{ID: "edge-min", Session: "alice", Text: "the first storable instant", Importance: 0.5,
		Created: engine.MinTime, Updated: engine.MinTime, LastAccess: engine.MinTime}}
	if err := s.Import(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openRecordsStore(t, dir, false)
	defer s.Close()
	got, err := s.Get(ctx, res.IDs[0], "edge-min")
	if err != nil || len(got) != 2 {
		t.Fatalf("Get = %v, %v", got, err)
	}
	if !got[0].Created.Equal(engine.MaxTime) || !got[1].Created.Equal(engine.MinTime) || !got[1].LastAccess.Equal(engine.MinTime) {
		t.Fatalf("edges came back as %v and %v / %v", got[0].Created, got[1].Created, got[1].LastAccess)
	}
	if n, err := s.Count(ctx, TimeRange(FieldCreated, engine.MinTime, engine.MaxTime)); err != nil || n != 2 {
		t.Fatalf("TimeRange(MinTime, MaxTime) = %d, %v", n, err)
	}
}
