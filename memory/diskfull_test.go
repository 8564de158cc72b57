package memory

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/internal/vfs"
)

// TestDiskFull: on a full disk Remember fails with ENOSPC and stores nothing, while Recall keeps
// answering (its access statistics are best effort: counted, logged once per burst); once space
// is freed the next Remember succeeds on the same Store, and recalls record their accesses again.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	full := vfs.NewFull(vfs.OS)
	var logs bytes.Buffer
	now := time.Unix(1_800_000_000, 0)
	s, err := Open(t.TempDir(), OpenOptions{
		Options: Options{Clock: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		Engine:  engine.Options{FS: full, CompactInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kept, err := s.Remember(ctx, "alice", "Alice keeps bees in the garden behind her house", RememberOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recallBees := func() []Result {
		t.Helper()
		res, err := s.Recall(ctx, "bees garden", RecallOptions{Session: "alice"})
		if err != nil {
			t.Fatalf("recall: %v", err)
		}
		if len(res) == 0 || res[0].ID != kept.IDs[0] {
			t.Fatalf("recall: %+v, want the kept memory", res)
		}
		return res
	}
	recallBees()

	full.SetFull(true)
	if _, err := s.Remember(ctx, "alice", "Alice's sister Dana plays the cello", RememberOptions{}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("remember on a full disk: %v, want ENOSPC", err)
	}
	for range 3 {
		recallBees() // answers although recording the access fails
	}
	if n := s.TouchFailures(); n != 3 {
		t.Fatalf("TouchFailures = %d, want 3", n)
	}
	if n := strings.Count(logs.String(), "recording recall access statistics failed"); n != 1 {
		t.Fatalf("the burst was logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Fatalf("the log does not say why:\n%s", logs.String())
	}
	if n, err := s.Count(ctx, Eq(FieldSession, "alice")); err != nil || n != 1 {
		t.Fatalf("count while full: %d %v, want only the kept memory", n, err)
	}

	full.SetFull(false) // space freed: no reopen
	if _, err := s.Remember(ctx, "alice", "Alice's sister Dana plays the cello", RememberOptions{}); err != nil {
		t.Fatalf("the first remember after space was freed: %v", err)
	}
	now = now.Add(time.Minute)
	recallBees()
	if !strings.Contains(logs.String(), "works again") {
		t.Fatalf("the end of the burst is not logged:\n%s", logs.String())
	}
	res := recallBees()
	// One recall before the disk filled, one after (a recall reads the count before adding its own).
	if res[0].Memory.AccessCount != 2 {
		t.Fatalf("access count %d, want 2 (the failed ones are lost, the others counted)", res[0].Memory.AccessCount)
	}
	if n := s.TouchFailures(); n != 3 {
		t.Fatalf("TouchFailures = %d after recovery, want still 3", n)
	}
	full.SetFull(true)
	recallBees()
	if n := strings.Count(logs.String(), "recording recall access statistics failed"); n != 2 {
		t.Fatalf("a new burst was logged %d times in all, want 2", n)
	}
	full.SetFull(false)
}
