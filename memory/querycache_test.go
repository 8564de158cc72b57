package memory_test

import (
	"testing"

	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

// TestQueryCache: a repeated query is embedded once; the cache stays within its bound, a query
// evicted from it is embedded again, and after Reembed the new model embeds the query itself
// (the key holds the fingerprint). QueryCache < 0 embeds every time.
func TestQueryCache(t *testing.T) {
	emb := memorytest.NewHashEmbedder(64, "q-a")
	s, _ := memorytest.NewStore(t, memory.NewMemBackend(), memory.Options{Embedder: emb, QueryCache: 2})
	if _, err := s.Remember(ctx, "s", "the cat sat on the mat", memory.RememberOptions{}); err != nil {
		t.Fatal(err)
	}
	recall := func(q string) []memory.Result {
		t.Helper()
		res, err := s.Recall(ctx, q, memory.RecallOptions{Session: "s", Mode: memory.ModeVector})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	calls := func() int64 { return emb.Calls() }

	base := calls()
	first := recall("cat on a mat")
	if got := calls() - base; got != 1 {
		t.Fatalf("first recall: %d embed calls, want 1", got)
	}
	second := recall("cat on a mat")
	if got := calls() - base; got != 1 {
		t.Fatalf("repeated recall: %d embed calls in all, want 1 (cached)", got)
	}
	if len(first) != 1 || len(second) != 1 || first[0].Score != second[0].Score {
		t.Fatalf("cached recall differs: %+v vs %+v", first, second)
	}
	recall("mat")
	recall("cat")          // evicts "cat on a mat" (bound 2)
	recall("cat on a mat") // embedded again
	if got := calls() - base; got != 4 {
		t.Fatalf("after eviction: %d embed calls, want 4", got)
	}

	emb2 := memorytest.NewHashEmbedder(64, "q-b")
	if err := s.Reembed(ctx, emb2, nil); err != nil {
		t.Fatal(err)
	}
	base2 := emb2.Calls()
	recall("cat on a mat")
	if got := emb2.Calls() - base2; got != 1 {
		t.Fatalf("after Reembed: new model embedded the query %d times, want 1 (no stale vector)", got)
	}

	off := memorytest.NewHashEmbedder(64, "q-off")
	s2, _ := memorytest.NewStore(t, memory.NewMemBackend(), memory.Options{Embedder: off, QueryCache: -1})
	before := off.Calls()
	for range 3 {
		if _, err := s2.Recall(ctx, "cat", memory.RecallOptions{Session: "s", Mode: memory.ModeVector}); err != nil {
			t.Fatal(err)
		}
	}
	if got := off.Calls() - before; got != 3 {
		t.Fatalf("QueryCache -1: %d embed calls for 3 recalls, want 3", got)
	}
}
