package memory

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestSessionsScanImportStats(t *testing.T) {
	eachBackend(t, func(t *testing.T, mk backendMaker) {
		s, clk := newTestStoreOn(t, mk(t), Options{DedupThreshold: -1})
		mustRemember(t, s, "a", "first memory of a", RememberOptions{})
		clk.Advance(time.Hour)
		mustRemember(t, s, "a", "second memory of a", RememberOptions{})
		mustRemember(t, s, "b", "only memory of b", RememberOptions{})
		ss, err := s.Sessions(ctx)
		if err != nil || len(ss) != 2 || ss[0] != (SessionInfo{"a", 2, clk.Now()}) || ss[1].Name != "b" || ss[1].Memories != 1 {
			t.Fatalf("Sessions: %v %+v", err, ss)
		}
		var exported []Memory
		if err := s.Scan(ctx, nil, func(m Memory) error { exported = append(exported, m); return nil }); err != nil || len(exported) != 3 {
			t.Fatalf("Scan: %v %d", err, len(exported))
		}
		// Import into a fresh store: vectors kept where given, embedded where missing.
		s2, _ := newTestStoreOn(t, mk(t), Options{})
		exported[0].Vector = nil
		if err := s2.Import(ctx, exported); err != nil {
			t.Fatal(err)
		}
		if err := s2.Import(ctx, []Memory{{ID: "x", Session: "a"}}); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("import without text: %v", err)
		}
		if err := s2.Import(ctx, append(slices.Clone(exported[:1]), exported[0])); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("import with a repeated ID: %v", err)
		}
		if !bytesEqualMemories(t, allMemories(t, s), allMemories(t, s2)) {
			t.Fatal("import did not reproduce the export")
		}
		st, err := s2.Stats(ctx)
		if err != nil || st.Memories != 3 || st.Sessions != 2 || st.Dim != 256 || st.Collection != DefaultCollection {
			t.Fatalf("Stats: %v %+v", err, st)
		}
	})
}

func bytesEqualMemories(t *testing.T, a, b []Memory) bool {
	return string(archiveJSON(t, a)) == string(archiveJSON(t, b))
}

func TestMaintenance(t *testing.T) {
	s, _ := newTestStore(t, Options{})
	if err := s.Flush(ctx); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("mem backend Flush: %v", err)
	}
	dir := t.TempDir()
	es, err := Open(filepath.Join(dir, "store"), OpenOptions{Options: Options{Embedder: newHashEmbedder(64, "h"), DedupThreshold: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 50 {
		r := mustRemember(t, es, "s", "memory number "+string(rune('a'+i%26))+" "+time.Duration(i).String(), RememberOptions{})
		if i == 0 {
			first = r.IDs[0]
		}
	}
	if err := es.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	mustRemember(t, es, "s", "memory after the flush", RememberOptions{})
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
	rs, err := es.Recall(ctx, "memory after the flush", RecallOptions{Session: "s", K: 1})
	if err != nil || len(rs) != 1 || rs[0].Text != "memory after the flush" {
		t.Fatalf("recall across segment and memtable: %v %q", err, texts(rs))
	}
	if err := es.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(filepath.Join(dir, "backup"), OpenOptions{Options: Options{Embedder: newHashEmbedder(64, "h")}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n, _ := b.Count(ctx, nil); n != 50 {
		t.Fatalf("backup holds %d memories, want 50", n)
	}
}
