package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory/lexical"
)

// TestTaskIDsPerSession: a task ID is unique within its session only, so starting a task says
// nothing about other sessions' tasks (issue 23: a writer learned that another session's task
// ID existed from "task exists"); each session's task of an ID is its own, and naming a task by
// ID alone works while one session has it.
func TestTaskIDsPerSession(t *testing.T) {
	ctx := context.Background()
	for _, b := range []struct {
		name string
		open func(t *testing.T) *Store
	}{
		{"mem", func(t *testing.T) *Store {
			e, err := lexical.New(lexical.Options{Dim: 16})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(context.Background(), NewMemBackend(), Options{Embedder: e})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"engine", func(t *testing.T) *Store {
			s, err := Open(t.TempDir(), OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			// Sessions that a naive "session/id" key would confuse: "a/b" + "c" and "a" + "b/c".
			pairs := []struct{ session, id string }{{"alice", "plan"}, {"bob", "plan"}, {"", "plan"}, {"a/b", "c"}, {"a", "b/c"}, {"x%2Fy", "z"}, {"x/y", "z"}}
			for _, p := range pairs {
				if _, err := s.StartSessionTask(ctx, p.session, p.id, "goal of "+p.session+" "+p.id); err != nil {
					t.Fatalf("start %q in %q: %v", p.id, p.session, err)
				}
			}
			if _, err := s.StartSessionTask(ctx, "bob", "plan", "again"); !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("starting bob's plan twice: %v", err)
			}
			for _, p := range pairs {
				tk, err := s.SessionTask(ctx, p.session, p.id)
				if err != nil || tk.Goal != "goal of "+p.session+" "+p.id || tk.Session != p.session {
					t.Fatalf("task %q of %q: %+v, %v", p.id, p.session, tk, err)
				}
			}
			all, err := s.Tasks(ctx)
			if err != nil || len(all) != len(pairs) {
				t.Fatalf("tasks: %d, %v", len(all), err)
			}
			if ts, err := s.TasksByID(ctx, "plan"); err != nil || len(ts) != 3 || ts[0].Session != "" || ts[2].Session != "bob" {
				t.Fatalf("tasks by ID: %+v, %v", ts, err)
			}
			// By ID alone: ambiguous while several sessions have it.
			var amb *AmbiguousTaskError
			if _, err := s.Task(ctx, "plan"); !errors.As(err, &amb) || !errors.Is(err, ErrInvalidInput) || len(amb.Sessions) != 3 {
				t.Fatalf("task plan by ID: %v", err)
			}
			if _, err := s.UpdateStep(ctx, "plan", Step{Name: "x"}, ""); !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("a step of plan by ID: %v", err)
			}
			// A change reaches its session's task only.
			if _, err := s.UpdateSessionStep(ctx, "bob", "plan", Step{Name: "draft", Status: StepDone}, "send"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.FinishSessionTask(ctx, "", "plan", TaskFailed); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteSessionTask(ctx, "alice", "plan"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionTask(ctx, "alice", "plan"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("alice's deleted plan: %v", err)
			}
			if tk, _ := s.SessionTask(ctx, "bob", "plan"); len(tk.Steps) != 1 || tk.Next != "send" || tk.Status != TaskActive {
				t.Fatalf("bob's plan: %+v", tk)
			}
			if tk, _ := s.SessionTask(ctx, "", "plan"); len(tk.Steps) != 0 || tk.Status != TaskFailed {
				t.Fatalf("the session-less plan: %+v", tk)
			}
			// One left by the ID: by ID alone works again.
			if err := s.DeleteSessionTask(ctx, "", "plan"); err != nil {
				t.Fatal(err)
			}
			if tk, err := s.Task(ctx, "plan"); err != nil || tk.Session != "bob" {
				t.Fatalf("plan by ID, only bob's left: %+v, %v", tk, err)
			}
			if tk, err := s.Task(ctx, "b/c"); err != nil || tk.Session != "a" {
				t.Fatalf("b/c by ID: %+v, %v", tk, err)
			}
			if st, err := s.Stats(ctx); err != nil || st.Tasks != len(pairs)-2 {
				t.Fatalf("stats: %d tasks, %v", st.Tasks, err)
			}
		})
	}
}

// TestUpgradeTaskKeys: a store whose task records have the layout before per-session task IDs
// (kind "task", keyed by the ID alone, as the previous build wrote them) opens, and its tasks are
// found by ID and by session, once moved to per-session keys; a crash between writing a moved
// record and deleting the old one leaves one task, not two; an undecodable old record stays
// where it is and Check reports it.
func TestUpgradeTaskKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	legacy := []Task{
		{ID: "t1", Goal: "plan the trip", Status: TaskActive, Next: "pack", Steps: []Step{{Name: "book", Status: StepDone, Result: []byte(`{"ok":true}`), Started: now, Updated: now}}},
		{ID: "report", Session: "alice", Goal: "write the report", Status: TaskDone, Finished: now},
		{ID: "hive/2", Session: "bob", Goal: "split the hive", Status: TaskActive},
	}
	s, err := Open(dir, OpenOptions{Options: Options{Clock: func() time.Time { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	// Write the old layout as the previous build did: putRecord(kind "task", key = ID).
	s.stmu.Lock()
	for i := range legacy {
		tk := &legacy[i]
		tk.Created, tk.Updated = now, now
		if tk.Steps == nil {
			tk.Steps = []Step{}
		}
		if err := s.putRecord(ctx, legacyKindTask, tk.ID, tk.Session, tk.Created, tk.Updated, tk); err != nil {
			t.Fatal(err)
		}
	}
	// A crash after t1's moved record was written, before its old one was deleted.
	m, err := taskRecord(&legacy[0])
	if err == nil {
		err = s.storeRecord(ctx, kindTask, taskKey("", "t1"), m)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.stmu.Unlock()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		s, err := Open(dir, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range legacy {
			got, err := s.SessionTask(ctx, want.Session, want.ID)
			if err != nil || got.Goal != want.Goal || got.Status != want.Status || len(got.Steps) != len(want.Steps) {
				t.Fatalf("round %d: task %q of %q: %+v, %v", round, want.ID, want.Session, got, err)
			}
			if got, err := s.Task(ctx, want.ID); err != nil || got.Session != want.Session {
				t.Fatalf("round %d: task %q by ID: %+v, %v", round, want.ID, got, err)
			}
		}
		if tk, _ := s.Task(ctx, "t1"); tk.Next != "pack" || string(tk.Steps[0].Result) != `{"ok":true}` {
			t.Fatalf("round %d: t1 %+v", round, tk)
		}
		all, err := s.Tasks(ctx)
		if err != nil || len(all) != 3 {
			t.Fatalf("round %d: %d tasks, %v", round, len(all), err)
		}
		s.stmu.Lock()
		old, err1 := s.countRecords(ctx, legacyKindTask)
		cur, err2 := s.countRecords(ctx, kindTask)
		s.stmu.Unlock()
		if old != 0 || cur != 3 || err1 != nil || err2 != nil {
			t.Fatalf("round %d: %d old and %d new task records (%v, %v)", round, old, cur, err1, err2)
		}
		if err := s.Check(ctx); err != nil {
			t.Fatalf("round %d: check: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	s, err = Open(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The IDs are per session now: alice may have a "hive/2" of her own.
	if _, err := s.StartSessionTask(ctx, "alice", "hive/2", "alice's hive"); err != nil {
		t.Fatal(err)
	}
	// An old record that is not a task stays, and Check says so.
	c, err := s.b.Collection(ctx, RecordsCollection)
	if err != nil {
		t.Fatal(err)
	}
	bad := Memory{ID: recordID(legacyKindTask, "bad"), Source: legacyKindTask, Text: "{not json", Importance: 1, Created: now, Updated: now, Vector: recordVector("bad")}
	if err := c.Upsert(ctx, []Memory{bad}); err != nil {
		t.Fatal(err)
	}
	s.taskKeys = false // as a fresh open would find it
	if all, err := s.Tasks(ctx); err != nil || len(all) != 4 {
		t.Fatalf("tasks beside an undecodable old record: %d, %v", len(all), err)
	}
	if got, err := c.Get(ctx, []string{bad.ID}); err != nil || len(got) != 1 {
		t.Fatalf("the undecodable old record: %v, %v", got, err)
	}
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "could not be upgraded") {
		t.Fatalf("check with an undecodable old record: %v", err)
	}
}
