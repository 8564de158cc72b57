package memory

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/engramdb/engram/memory/lexical"
)

// TestGenFixtureV1 wrote testdata/store-v1 with the layout of the first release (archive, conversations
// and tasks in the KV namespace): GEN_FIXTURE=/tmp/x go test -run TestGenFixtureV1 ./memory.
// It is kept to document the fixture; rerunning it with the current code writes the current layout.
func TestGenFixtureV1(t *testing.T) {
	dir := os.Getenv("GEN_FIXTURE")
	if dir == "" {
		t.Skip()
	}
	e, err := lexical.New(lexical.Options{Dim: 16})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s, err := Open(dir, OpenOptions{Options: Options{Embedder: e, Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	texts := []string{"the cat sleeps on the red sofa", "invoices are due on the first monday", "the garden needs water in july", "alice prefers green tea to coffee", "the server restarts every night at two"}
	for i, tx := range texts {
		if _, err := s.Remember(ctx, "s1", tx, RememberOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			now = now.Add(400 * 24 * time.Hour)
		}
	}
	res, err := s.Cleanup(ctx, CleanupPolicy{})
	if err != nil || len(res.Memories) != 3 {
		t.Fatal(err, len(res.Memories))
	}
	if _, err := s.AddTurn(ctx, "s1", Turn{Role: "user", Text: "hello there"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddTurn(ctx, "s1", Turn{Role: "assistant", Text: "hi, how can I help?"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartTask(ctx, "t1", "plan the trip"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateStep(ctx, "t1", Step{Name: "book", Status: StepDone, Result: []byte(`{"ok":true}`)}, "pack"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
