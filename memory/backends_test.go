package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
	"github.com/engramdb/engram/memory/memorytest"
)

var ctx = context.Background()

func TestSuiteMemBackend(t *testing.T) {
	memorytest.Run(t, func(*testing.T) memory.Backend { return memory.NewMemBackend() })
}

func TestSuiteEngineBackend(t *testing.T) {
	memorytest.Run(t, newEngineBackend)
}

func newEngineBackend(t *testing.T) memory.Backend {
	db, err := engine.Open(t.TempDir(), engine.Options{UnsafeNoSync: true, CompactInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := memory.NewEngineBackend(db)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestMaintenance(t *testing.T) {
	s, _ := memorytest.NewStore(t, memory.NewMemBackend(), memory.Options{})
	if err := s.Flush(ctx); !errors.Is(err, memory.ErrUnsupported) {
		t.Fatalf("mem backend Flush: %v", err)
	}
	dir := t.TempDir()
	es, err := memory.Open(filepath.Join(dir, "store"), memory.OpenOptions{Options: memory.Options{Embedder: memorytest.NewHashEmbedder(64, "h"), DedupThreshold: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 50 {
		r := memorytest.Remember(t, es, "s", "memory number "+string(rune('a'+i%26))+" "+time.Duration(i).String(), memory.RememberOptions{})
		if i == 0 {
			first = r.IDs[0]
		}
	}
	if err := es.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	memorytest.Remember(t, es, "s", "memory after the flush", memory.RememberOptions{})
	if _, err := es.Forget(ctx, first); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{func() error { return es.Compact(ctx) }, func() error { return es.Check(ctx) },
		func() error { return es.Backup(ctx, filepath.Join(dir, "backup")) }} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := es.Stats(ctx)
	if err != nil || st.Memories != 50 || st.Backend.DiskBytes == 0 {
		t.Fatalf("Stats: %v %+v", err, st)
	}
	rs, err := es.Recall(ctx, "memory after the flush", memory.RecallOptions{Session: "s", K: 1})
	if err != nil || len(rs) != 1 || rs[0].Text != "memory after the flush" {
		t.Fatalf("recall across segment and memtable: %v %q", err, memorytest.Texts(rs))
	}
	if err := es.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := memory.Open(filepath.Join(dir, "backup"), memory.OpenOptions{Options: memory.Options{Embedder: memorytest.NewHashEmbedder(64, "h")}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, _ := b.Count(ctx, nil); n != 50 {
		t.Fatalf("backup holds %d memories, want 50", n)
	}
}

// TestTouchSurvivesReopen: the access statistics a Recall records are durable on the engine.
func TestTouchSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	clk := memorytest.NewClock()
	opts := memory.OpenOptions{Options: memory.Options{Embedder: memorytest.NewHashEmbedder(32, "h"), Clock: clk.Now}}
	s, err := memory.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := memorytest.Remember(t, s, "s", "the spare key is under the flower pot", memory.RememberOptions{})
	clk.Advance(time.Hour)
	for range 2 {
		if rs, err := s.Recall(ctx, "spare key", memory.RecallOptions{Session: "s", K: 1}); err != nil || len(rs) != 1 {
			t.Fatalf("recall: %v %d", err, len(rs))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = memory.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Get(ctx, r.IDs[0])
	if err != nil || len(ms) != 1 || ms[0].AccessCount != 2 || !ms[0].LastAccess.Equal(clk.Now()) {
		t.Fatalf("after reopen: %v %+v", err, ms)
	}
}
