package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

// TestSegmentHeader: every segment file says which collection it belongs
// to (name, dimension, metric, fingerprint), how many nodes it holds and
// which were dead when written, the WAL position it covers and (for a
// compaction's output) which files it supersedes: enough to rebuild a
// manifest entry from seg/ alone.
func TestSegmentHeader(t *testing.T) {
	leaveDamaged(t)
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	cfg := CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "model-x"}
	c, err := db.CreateCollection(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	recs := mkRecords(r, 8, 0, 30)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, recs[3:5]); err != nil { // nodes 3 and 4 die in the memtable
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	lsn1 := db.checkpoint
	if err := c.Upsert(ctx, mkRecords(r, 8, 100, 10)); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	lsn2 := db.checkpoint
	if lsn1 == 0 || lsn2 <= lsn1 {
		t.Fatalf("checkpoints %v, %v", lsn1, lsn2)
	}
	h1, err := readSegHeader(db.segPath(1))
	if err != nil {
		t.Fatal(err)
	}
	want := segHeader{path: db.segPath(1), version: segVersion, cfg: cfg, file: 1, count: 32, lsn: lsn1, dead: []uint32{3, 4}}
	want.size = uint64(len(c.segs[0].sf.data))
	if !sameHeader(h1, want) {
		t.Fatalf("header of the first flush = %+v, want %+v", h1, want)
	}
	h2, err := readSegHeader(db.segPath(2))
	if err != nil || h2.lsn != lsn2 || h2.count != 10 || len(h2.dead) != 0 || len(h2.replaces) != 0 {
		t.Fatalf("header of the second flush = %+v, %v", h2, err)
	}
	if _, err := c.Delete(recs[7].ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	h3, err := readSegHeader(db.segPath(3))
	if err != nil || h3.lsn != lsn2 || h3.count != 39 || len(h3.dead) != 0 || !slices.Equal(h3.replaces, []uint64{1, 2}) || h3.cfg != cfg {
		t.Fatalf("header of the compacted file = %+v, %v", h3, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A copy under another number is refused, by the header and by Open.
	b, err := os.ReadFile(filepath.Join(dir, "seg", segName(3)))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), segName(9))
	if err := os.WriteFile(other, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSegHeader(other); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("header of a renamed file = %v, want ErrCorrupt", err)
	}
	// A damaged info section is corruption, never a header.
	path := filepath.Join(dir, "seg", segName(3))
	sf, err := openSegFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var info sectionEntry
	for _, e := range sf.entries {
		if e.kind == secInfo {
			info = e
		}
	}
	sf.close()
	flipByte(t, path, int(info.off)+2)
	var ce *CorruptionError
	if _, err := readSegHeader(path); !errors.As(err, &ce) || ce.File != path {
		t.Fatalf("header of a damaged info section = %v, want a CorruptionError naming the file", err)
	}
}

// TestSegmentHeaderV2: a version 2 file knows its collection and dead
// nodes (from its id table) but not its WAL position.
func TestSegmentHeaderV2(t *testing.T) {
	dir := copyFixture(t, fixtureV2)
	h, err := readSegHeader(filepath.Join(dir, "seg", segName(1)))
	if err != nil {
		t.Fatal(err)
	}
	want := segHeader{path: filepath.Join(dir, "seg", segName(1)), version: segVersionV2,
		cfg:  CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "fp-v2"},
		file: 1, count: 61, size: h.size, lsn: wal.LSN(0), dead: []uint32{5}}
	if !sameHeader(h, want) || h.size == 0 {
		t.Fatalf("v2 header = %+v, want %+v", h, want)
	}
}

func sameHeader(a, b segHeader) bool {
	return a.path == b.path && a.version == b.version && a.cfg == b.cfg && a.file == b.file && a.count == b.count &&
		a.size == b.size && a.lsn == b.lsn && slices.Equal(a.dead, b.dead) && slices.Equal(a.replaces, b.replaces)
}
