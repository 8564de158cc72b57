package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func archiveJSON(t *testing.T, ms []Memory) []byte {
	t.Helper()
	slices.SortFunc(ms, func(a, b Memory) int { return strings.Compare(a.ID, b.ID) })
	var b bytes.Buffer
	for i := range ms {
		line, err := json.Marshal(toArchived(&ms[i]))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func allMemories(t *testing.T, s *Store) []Memory {
	t.Helper()
	c, _, _ := s.current()
	var ms []Memory
	if err := c.Scan(context.Background(), nil, func(m Memory) error { ms = append(ms, m); return nil }); err != nil {
		t.Fatal(err)
	}
	return ms
}

// seedCleanup writes memories of various ages, recalls one old one, and returns the IDs that
// the default policy must select.
func seedCleanup(t *testing.T, s *Store, clk *fakeClock) (stale []string) {
	t.Helper()
	now := clk.Now()
	n := 600 // more than two archive parts
	if testing.Short() {
		n = 240
	}
	for i := range n {
		age := time.Duration(i%3) * 100 * day // 0, 100, 200 days
		r := mustRemember(t, s, fmt.Sprintf("s%d", i%4), fmt.Sprintf("memory %d about topic %d", i, i%17),
			RememberOptions{Time: now.Add(-age), Tags: []string{"t"}, Source: "src", Importance: 0.25})
		if age > 180*day {
			stale = append(stale, r.IDs[0])
		}
	}
	// Recalled memories are kept even when old.
	rs, err := s.Recall(context.Background(), "memory 2 about topic 2", RecallOptions{Session: "s2", K: 3, Decay: Decay{Off: true}})
	if err != nil || len(rs) == 0 {
		t.Fatal(err)
	}
	for _, r := range rs {
		stale = slices.DeleteFunc(stale, func(id string) bool { return id == r.ID })
	}
	clk.Advance(time.Hour)
	return stale
}

func TestCleanupArchiveRestoreRoundTrip(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		// 1024-d vectors: 600 memories need several parts to fit the engine's KV value limit.
		s, clk := newTestStoreOn(t, mk(t), Options{DedupThreshold: -1, Embedder: newHashEmbedder(1024, "h1024")})
		stale := seedCleanup(t, s, clk)
		before := archiveJSON(t, allMemories(t, s))
		total := len(allMemories(t, s))

		dry, err := s.Cleanup(ctx, CleanupPolicy{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(dry.Memories))
		for i, m := range dry.Memories {
			got[i] = m.ID
		}
		slices.Sort(got)
		slices.Sort(stale)
		if !slices.Equal(got, stale) || dry.Batch != "" {
			t.Fatalf("dry run listed %d memories, want %d", len(got), len(stale))
		}
		if !bytes.Equal(archiveJSON(t, allMemories(t, s)), before) {
			t.Fatal("dry run changed the store")
		}

		res, err := s.Cleanup(ctx, CleanupPolicy{})
		if err != nil || len(res.Memories) != len(stale) || res.Batch == "" {
			t.Fatalf("cleanup: %v, %d", err, len(res.Memories))
		}
		if n, _ := s.Count(ctx, nil); n != total-len(stale) {
			t.Fatalf("%d live after cleanup, want %d", n, total-len(stale))
		}
		arch, err := s.Archived(ctx)
		if err != nil || len(arch) != len(stale) {
			t.Fatalf("archive lists %d, want %d (%v)", len(arch), len(stale), err)
		}
		// Cleanup again: nothing left to move.
		if res, _ := s.Cleanup(ctx, CleanupPolicy{}); len(res.Memories) != 0 {
			t.Fatalf("second cleanup moved %d", len(res.Memories))
		}

		// Restore one, then the rest; twice to prove idempotence.
		if n, err := s.Restore(ctx, stale[0]); err != nil || n != 1 {
			t.Fatalf("restore one: %d %v", n, err)
		}
		if n, err := s.Restore(ctx); err != nil || n != len(stale)-1 {
			t.Fatalf("restore all: %d %v", n, err)
		}
		if n, err := s.Restore(ctx); err != nil || n != 0 {
			t.Fatalf("restore again: %d %v", n, err)
		}
		if after := archiveJSON(t, allMemories(t, s)); !bytes.Equal(after, before) {
			t.Fatal("restored memories differ from the originals")
		}
		if arch, _ := s.Archived(ctx); len(arch) != 0 {
			t.Fatalf("archive still lists %d", len(arch))
		}
	})
}

// TestCleanupCrashBetweenArchiveAndDelete: the delete after a durable archive fails (as a crash
// there would leave it); nothing is lost, and cleanup/restore converge afterwards.
func TestCleanupCrashBetweenArchiveAndDelete(t *testing.T) {
	fb := &failingBackend{Backend: NewMemBackend()}
	clk := newClock()
	s, err := New(ctx, fb, Options{Embedder: newHashEmbedder(64, "h"), Clock: clk.Now, DedupThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	stale := seedCleanup(t, s, clk)
	before := archiveJSON(t, allMemories(t, s))
	fb.failDelete = true
	if _, err := s.Cleanup(ctx, CleanupPolicy{}); !errors.Is(err, errInjected) {
		t.Fatalf("cleanup with failing delete: %v", err)
	}
	if !bytes.Equal(archiveJSON(t, allMemories(t, s)), before) {
		t.Fatal("live memories changed although the delete failed")
	}
	if arch, _ := s.Archived(ctx); len(arch) != len(stale) {
		t.Fatalf("archive holds %d, want %d", len(arch), len(stale))
	}
	fb.failDelete = false
	// Cleanup again archives them a second time and deletes them; restore keeps one copy each.
	if res, err := s.Cleanup(ctx, CleanupPolicy{}); err != nil || len(res.Memories) != len(stale) {
		t.Fatalf("cleanup after recovery: %v %d", err, len(res.Memories))
	}
	if n, err := s.Restore(ctx); err != nil || n != len(stale) {
		t.Fatalf("restore: %d %v", n, err)
	}
	if !bytes.Equal(archiveJSON(t, allMemories(t, s)), before) {
		t.Fatal("memories lost or changed across the failed cleanup")
	}
	if arch, _ := s.Archived(ctx); len(arch) != 0 {
		t.Fatalf("archive still lists %d", len(arch))
	}
}

func TestRestoreAfterModelChangeReembeds(t *testing.T) {
	s, clk := newTestStore(t, Options{DedupThreshold: -1})
	seedCleanup(t, s, clk)
	if _, err := s.Cleanup(ctx, CleanupPolicy{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reembed(ctx, newHashEmbedder(48, "other"), nil); err != nil {
		t.Fatal(err)
	}
	n, err := s.Restore(ctx)
	if err != nil || n == 0 {
		t.Fatalf("restore: %d %v", n, err)
	}
	for _, m := range allMemories(t, s) {
		if len(m.Vector) != 48 {
			t.Fatalf("memory %s has a %d-d vector after restore into a 48-d model", m.ID, len(m.Vector))
		}
	}
}

func FuzzDecodeArchive(f *testing.F) {
	good, err := encodeArchive(archiveHeader{Fingerprint: "fp", Dim: 2}, []Memory{
		{ID: "a", Session: "s", Text: "hello", Vector: []float32{1, 0}, Created: time.Unix(5, 0)},
		{ID: "b", Session: "s", Text: "世界", Tags: []string{"x"}, Vector: []float32{0, 1}},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("not zstd"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ms, err := decodeArchive(b)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same memories.
		b2, err := encodeArchive(h, ms)
		if err != nil {
			t.Fatal(err)
		}
		_, ms2, err := decodeArchive(b2)
		if err != nil || len(ms2) != len(ms) {
			t.Fatalf("re-decode: %v %d != %d", err, len(ms2), len(ms))
		}
	})
}

func TestModelLockAndReembed(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		b := mk(t)
		clk := newClock()
		e1 := newHashEmbedder(64, "model-A")
		s, err := New(ctx, b, Options{Embedder: e1, Clock: clk.Now, DedupThreshold: -1})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := range 700 {
			r := mustRemember(t, s, "s", fmt.Sprintf("fact number %d about subject %d", i, i%13), RememberOptions{Tags: []string{"k"}})
			ids = append(ids, r.IDs[0])
		}
		if _, err := s.Recall(ctx, "fact number 3", RecallOptions{Session: "s"}); err != nil {
			t.Fatal(err)
		}

		_, err = New(ctx, b, Options{Embedder: newHashEmbedder(32, "model-B")})
		var mm *ModelMismatchError
		if !errors.Is(err, ErrModelMismatch) || !errors.As(err, &mm) || mm.Stored != "model-A" || mm.Embedder != "model-B" ||
			!strings.Contains(err.Error(), "model-A") || !strings.Contains(err.Error(), "model-B") {
			t.Fatalf("open with another model: %v", err)
		}

		// A Reembed that dies part way (the embedder fails in the third batch of ReembedBatch) ...
		e2 := newHashEmbedder(32, "model-B")
		e2.failAfter = 2 * ReembedBatch / DefaultEmbedBatch
		if err := s.Reembed(ctx, e2, nil); !errors.Is(err, errEmbedFailed) {
			t.Fatalf("failing reembed: %v", err)
		}
		if s.Embedder() != e1 {
			t.Fatal("failed reembed switched the model")
		}
		if _, err := s.Recall(ctx, "fact", RecallOptions{Session: "s"}); err != nil {
			t.Fatalf("recall during an unfinished reembed: %v", err)
		}
		before := allMemories(t, s) // with the access statistics of that recall
		// ... resumes from a fresh store on the same backend, embedding only what is missing.
		s2, err := New(ctx, b, Options{Embedder: e1, Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		e3 := newHashEmbedder(32, "model-B")
		var last [2]int
		if err := s2.Reembed(ctx, e3, func(done, total int) { last = [2]int{done, total} }); err != nil {
			t.Fatal(err)
		}
		if last != [2]int{700, 700} {
			t.Fatalf("progress ended at %v", last)
		}
		// Two batches were done before the failure; only the rest is embedded again.
		if calls, want := e3.calls.Load(), int64((700-2*ReembedBatch+DefaultEmbedBatch-1)/DefaultEmbedBatch); calls != want {
			t.Fatalf("resumed reembed made %d embed calls, want %d", calls, want)
		}
		after := allMemories(t, s2)
		if len(after) != len(before) {
			t.Fatalf("%d memories after reembed, want %d", len(after), len(before))
		}
		for i := range before {
			before[i].Vector = nil
		}
		for i := range after {
			if len(after[i].Vector) != 32 {
				t.Fatalf("vector dim %d", len(after[i].Vector))
			}
			after[i].Vector = nil
		}
		if !bytes.Equal(archiveJSON(t, before), archiveJSON(t, after)) {
			t.Fatal("reembed changed memories beyond their vectors")
		}
		// The switch is durable: a new store needs model B now, and the old collection is gone.
		if _, err := New(ctx, b, Options{Embedder: e1}); !errors.Is(err, ErrModelMismatch) {
			t.Fatalf("old model after switch: %v", err)
		}
		s3, err := New(ctx, b, Options{Embedder: newHashEmbedder(32, "model-B")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Collection(ctx, DefaultCollection); !errors.Is(err, ErrNoCollection) {
			t.Fatalf("old collection still there: %v", err)
		}
		rs, err := s3.Recall(ctx, "fact number 5 about subject 5", RecallOptions{Session: "s", K: 1, Mode: ModeVector})
		if err != nil || len(rs) != 1 || rs[0].ID != ids[5] {
			t.Fatalf("recall with the new model: %v %q", err, texts(rs))
		}
	})
}
