package api

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

func newLocal(t *testing.T) *Local {
	t.Helper()
	s, _ := memorytest.NewStore(t, memory.NewMemBackend(), memory.Options{ForgetRetention: time.Hour})
	return New(s, Options{})
}

// remember stores text in session as LocalCaller and returns its ID.
func remember(t *testing.T, l *Local, session, text string) string {
	t.Helper()
	res, err := l.Remember(WithCaller(context.Background(), LocalCaller), RememberRequest{Session: session, Text: text})
	if err != nil || len(res.IDs) != 1 {
		t.Fatalf("remember %q: %+v %v", text, res, err)
	}
	return res.IDs[0]
}

// A context without a caller is nobody's: every operation is refused.
func TestNoCallerNoAccess(t *testing.T) {
	l := newLocal(t)
	remember(t, l, "alice", "Alice prefers green tea.")
	ctx := context.Background()
	if _, err := l.Remember(ctx, RememberRequest{Session: "alice", Text: "x"}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("remember without a caller: %v", err)
	}
	if _, err := l.Recall(ctx, RecallRequest{Session: "alice", Query: "tea"}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("recall without a caller: %v", err)
	}
	if _, err := l.Stats(ctx); !errors.Is(err, ErrForbidden) {
		t.Fatalf("stats without a caller: %v", err)
	}
}

// A scoped key reaches its sessions only, and another session's memories
// and tasks look missing.
func TestScopedCaller(t *testing.T) {
	l := newLocal(t)
	alice := remember(t, l, "alice", "Alice prefers green tea.")
	bob := remember(t, l, "bob", "Bob prefers black tea.")
	local := WithCaller(context.Background(), LocalCaller)
	if _, err := l.StartTask(local, StartTaskRequest{ID: "bobs", Goal: "brew", Session: "bob"}); err != nil {
		t.Fatal(err)
	}
	ctx := WithCaller(context.Background(), &Caller{Name: "k", Rights: RightRead | RightWrite, Scope: Scope{"ali*"}})

	if _, err := l.Remember(ctx, RememberRequest{Session: "bob", Text: "x"}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("remember in bob: %v", err)
	}
	if _, err := l.Get(ctx, GetRequest{ID: bob}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("get bob's memory: %v", err)
	}
	if _, err := l.Forget(ctx, ForgetRequest{IDs: []string{alice, bob}}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("forget with bob's memory: %v", err)
	}
	rec, err := l.Recall(ctx, RecallRequest{AllSessions: true, Query: "tea", K: 10})
	if err != nil || len(rec.Results) != 1 || rec.Results[0].ID != alice {
		t.Fatalf("recall from every session: %+v %v", rec, err)
	}
	page, err := l.List(ctx, ListRequest{})
	if err != nil || len(page.Memories) != 1 || page.Memories[0].ID != alice {
		t.Fatalf("list: %+v %v", page, err)
	}
	if ts, err := l.Tasks(ctx); err != nil || len(ts.Tasks) != 0 {
		t.Fatalf("tasks: %+v %v", ts, err)
	}
	if _, err := l.Task(ctx, TaskRef{ID: "bobs"}); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("bob's task: %v", err)
	}
	if _, err := l.Stats(ctx); !errors.Is(err, ErrForbidden) {
		t.Fatalf("stats without the admin right: %v", err)
	}
	// Nothing of bob's changed.
	if m, err := l.Get(local, GetRequest{ID: bob}); err != nil || m.Text != "Bob prefers black tea." {
		t.Fatalf("bob's memory after the refusals: %+v %v", m, err)
	}
}

// Bad requests are refused before they run, as ErrBadRequest.
func TestBadRequests(t *testing.T) {
	l := newLocal(t)
	ctx := WithCaller(context.Background(), LocalCaller)
	for name, run := range map[string]func() error{
		"mode":       func() error { _, err := l.Recall(ctx, RecallRequest{Query: "x", Mode: "fuzzy"}); return err },
		"fusion":     func() error { _, err := l.Recall(ctx, RecallRequest{Query: "x", Fusion: "max"}); return err },
		"min score":  func() error { _, err := l.Recall(ctx, RecallRequest{Query: "x", MinScore: new(2.0)}); return err },
		"importance": func() error { _, err := l.Remember(ctx, RememberRequest{Text: "x", Importance: -1}); return err },
		"time": func() error {
			_, err := l.Remember(ctx, RememberRequest{Text: "x", Time: time.Now().Add(48 * time.Hour)})
			return err
		},
		"since":        func() error { _, err := l.List(ctx, ListRequest{Selection: Selection{Since: "yesterday"}}); return err },
		"limit":        func() error { _, err := l.List(ctx, ListRequest{Limit: -1}); return err },
		"forget":       func() error { _, err := l.Forget(ctx, ForgetRequest{}); return err },
		"forget twice": func() error { _, err := l.Forget(ctx, ForgetRequest{IDs: []string{"a"}, All: true}); return err },
		"restore":      func() error { _, err := l.RestoreForgotten(ctx, RestoreForgottenRequest{}); return err },
		"archive":      func() error { _, err := l.RestoreArchived(ctx, RestoreRequest{}, nil); return err },
		"cleanup":      func() error { _, err := l.Cleanup(ctx, CleanupRequest{OlderThan: "soon"}, nil); return err },
	} {
		if err := run(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v, want ErrBadRequest", name, err)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-01-02T03:04:05Z": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		"2026-01-02":           time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
	} {
		if got, err := ParseWhen(in, now, false); err != nil || !got.Equal(want) {
			t.Errorf("ParseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, _ := ParseWhen("2026-01-02", now, true); !got.Equal(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond)) {
		t.Errorf("end of day: %v", got)
	}
	for _, bad := range []string{"", "yesterday", "-3d", "1e9d", "NaNd"} {
		if _, err := ParseWhen(bad, now, false); err == nil {
			t.Errorf("ParseWhen(%q) accepted", bad)
		}
	}
}

// Writes and reads run concurrently through one Local (go test -race).
func TestConcurrentOps(t *testing.T) {
	l := newLocal(t)
	ctx := WithCaller(context.Background(), LocalCaller)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 5 {
				if _, err := l.Remember(ctx, RememberRequest{Session: "s", Text: "note number " + string(rune('a'+i)) + string(rune('a'+j))}); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := l.Recall(ctx, RecallRequest{Session: "s", Query: "note", NoTouch: i%2 == 0}); err != nil {
					t.Error(err)
				}
				if _, err := l.List(ctx, ListRequest{Session: new("s")}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// A caller without the read right gets receipts from writes, and the
// answers read back as receipts (a client of a server sees what the server
// decided); a reader gets the objects.
func TestReceipts(t *testing.T) {
	l := newLocal(t)
	id := remember(t, l, "alice", "Alice's locker code is 4711.")
	writer := WithCaller(context.Background(), &Caller{Name: "w", Rights: RightWrite, Scope: Scope{"*"}})
	text := "Alice's locker code is 1234."
	m, err := l.Update(writer, id, UpdateRequest{Text: &text})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := l.AddTurn(writer, "alice", memory.Turn{Role: "user", Text: "the code is 1234"})
	if err != nil {
		t.Fatal(err)
	}
	task, err := l.StartTask(writer, StartTaskRequest{ID: "t", Goal: "open the locker 1234", Session: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := l.Cleanup(writer, CleanupRequest{OlderThan: "1h", IncludeRecalled: true, DryRun: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		v    any
		back interface{ receipt() bool }
	}{
		"memory": {m, new(MemoryAnswer)}, "conversation": {conv, new(ConversationAnswer)}, "task": {task, new(TaskAnswer)}, "cleanup": {cl, nil},
	} {
		data, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "1234") || strings.Contains(string(data), "4711") {
			t.Errorf("%s: a writer got stored text: %s", name, data)
		}
		if c.back == nil {
			continue
		}
		if err := json.Unmarshal(data, c.back); err != nil || !c.back.receipt() {
			t.Errorf("%s: %s reads back as %+v (%v), not as a receipt", name, data, c.back, err)
		}
	}
	// A reader gets the memory, and it reads back as one.
	full, err := l.Update(WithCaller(context.Background(), LocalCaller), id, UpdateRequest{Text: &text})
	if err != nil || full.Receipt || full.Text != text {
		t.Fatalf("update as a reader: %+v %v", full, err)
	}
	data, _ := json.Marshal(full)
	var back MemoryAnswer
	if err := json.Unmarshal(data, &back); err != nil || back.Receipt || back.Text != text {
		t.Fatalf("%s reads back as %+v (%v)", data, back, err)
	}
}

func (a *MemoryAnswer) receipt() bool       { return a.Receipt }
func (a *ConversationAnswer) receipt() bool { return a.Receipt }
func (a *TaskAnswer) receipt() bool         { return a.Receipt }
