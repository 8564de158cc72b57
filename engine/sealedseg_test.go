package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/quant"
)

func sealedStore(t *testing.T, dir string, k *Key) (*DB, *Collection, []Record) {
	t.Helper()
	db := openT(t, dir, encOpts(k))
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	recs := append(secretRecords("alice", 40), secretRecords("bob", 40)...)
	recs = append(recs, Record{ID: "nosession", Vector: recs[0].Vector, Text: "ZEBRA-SECRET-none"})
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	return db, c, recs
}

func expectRecords(t *testing.T, c *Collection, recs []Record) {
	t.Helper()
	for _, r := range recs {
		got, err := c.Get(r.ID)
		if err != nil || got.Text != r.Text || !bytes.Equal(vecBytes(got.Vector), vecBytes(r.Vector)) {
			t.Fatalf("Get(%s) = %+v, %v", r.ID, got, err)
		}
	}
	hits, err := c.Search(ctx, SearchRequest{Vector: recs[3].Vector, K: 1})
	if err != nil || len(hits) != 1 || hits[0].ID != recs[3].ID {
		t.Fatalf("search: %+v %v", hits, err)
	}
}

// TestSealedSegments: in an encrypted store, what a flush, a compaction
// and a backup write holds no byte of the records' text, IDs, metadata or
// vectors, and reads back whole through the key.
func TestSealedSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("sealed segments")
	db, c, recs := sealedStore(t, dir, k)
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	more := secretRecords("carol", 5)
	if err := c.Upsert(ctx, more); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(recs[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
	if len(segs) != 2 {
		t.Fatalf("segments %v", segs)
	}
	for _, p := range segs {
		b, _ := os.ReadFile(p)
		if !bytes.HasPrefix(b, []byte(sealedSegMagic)) {
			t.Fatalf("%s is not sealed", p)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup")
	if err := db.BackupWithKeys(backup); err != nil {
		t.Fatal(err)
	}
	all := append(append([]Record(nil), recs...), more...)
	live := append(append([]Record{recs[0]}, recs[2:]...), more...)
	expectRecords(t, c, live)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	needles := append(needlesOf(all), []byte("alice"), []byte("PLUM-META"))
	for _, d := range []string{dir, backup} {
		if found := scanDir(t, d, needles); len(found) > 0 {
			t.Fatalf("plaintext in %s: %q", d, found)
		}
	}
	for _, d := range []string{dir, backup} {
		db := openT(t, d, encOpts(k))
		c, _ := db.Collection("notes")
		expectRecords(t, c, live)
		if _, err := c.Get(recs[1].ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleted record: %v", err)
		}
		if err := db.Check(); err != nil {
			t.Fatalf("check %s: %v", d, err)
		}
		db.Close()
	}
}

// TestSealedSegmentDamage: a flipped byte anywhere in a sealed segment
// file is corruption at open or first read, named by file, never data;
// Repair keeps the records of the chunks that still authenticate.
func TestSealedSegmentDamage(t *testing.T) {
	k := testKey("sealed damage")
	base := filepath.Join(t.TempDir(), "base")
	db, _, recs := sealedStore(t, base, k)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(base, "seg", "*.seg"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	orig, _ := os.ReadFile(segs[0])
	for _, off := range []int{0, 9, 20, 30, 45, 60, 100, len(orig) / 2, len(orig) - 17, len(orig) - 1} {
		dir := filepath.Join(t.TempDir(), "s")
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		b := bytes.Clone(orig)
		b[off] ^= 0x20
		path := filepath.Join(dir, "seg", filepath.Base(segs[0]))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, encOpts(k))
		if err == nil {
			err = db.Check()
			db.Close()
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(segs[0])) {
			t.Fatalf("byte %d flipped: %v", off, err)
		}
		rep, err := Repair(dir, encOpts(k))
		if err != nil {
			t.Fatalf("repair after byte %d: %v", off, err)
		}
		db = openT(t, dir, encOpts(k))
		c, _ := db.Collection("notes")
		n := 0
		for _, r := range recs {
			got, err := c.Get(r.ID)
			if err == nil {
				if got.Text != r.Text {
					t.Fatalf("byte %d: repaired record %s reads %q", off, r.ID, got.Text)
				}
				n++
			}
		}
		if n+rep.DroppedRecords != len(recs) {
			t.Fatalf("byte %d: %d kept + %d lost != %d (%+v)", off, n, rep.DroppedRecords, len(recs), rep)
		}
		db.Close()
	}
}
