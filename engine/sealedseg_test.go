package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// The manifest's KV entries and access overrides (record IDs) are
	// sealed too.
	if err := db.KV().Put("KV-SECRET-KEY", []byte("KV-SECRET-VALUE")); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch([]string{recs[5].ID, more[2].ID}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
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
	needles := append(needlesOf(all), []byte("alice"), []byte("PLUM-META"), []byte("KV-SECRET"))
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
		if v, err := db.KV().Get("KV-SECRET-KEY"); err != nil || string(v) != "KV-SECRET-VALUE" {
			t.Fatalf("KV in %s: %q %v", d, v, err)
		}
		if got, err := c.Get(recs[5].ID); err != nil || got.AccessCount != recs[5].AccessCount+1 {
			t.Fatalf("access stats in %s: %+v %v", d, got, err)
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

// openCollectionErr opens dir and its collection "notes" and returns the
// error of either (a collection whose file cannot be read is broken, the
// rest of the store opens).
func openCollectionErr(t *testing.T, dir string, o Options) error {
	t.Helper()
	db, err := Open(dir, o)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Collection("notes")
	return err
}

func copyKeys(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from, keysName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, keysName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPurgeReachesBackups: a backup holds sealed files and no KEYS; it
// opens with the store's KEYS copied in. Once a session is purged
// (records deleted, ReleaseSessionKeys), the live files that held it are
// rewritten without it, and the backup taken before cannot give its text
// with the store's current keys: its files that held the session fail as
// sealed with a destroyed key, and repair drops them.
func TestPurgeReachesBackups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	k := testKey("purge reaches backups")
	db, c, recs := sealedStore(t, dir, k)
	alice, bob := recs[:40], recs[40:]
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := filepath.Join(t.TempDir(), "before")
	if err := db.Backup(before); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(before, keysName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a backup carries KEYS: %v", err)
	}
	withKeys := filepath.Join(t.TempDir(), "withkeys")
	if err := db.BackupWithKeys(withKeys); err != nil {
		t.Fatal(err)
	}
	// Without KEYS the backup says what it is.
	if _, err := Open(before, encOpts(k)); !errors.Is(err, ErrKeyRequired) || !strings.Contains(err.Error(), "KEYS") {
		t.Fatalf("backup without KEYS, with the key: %v", err)
	}
	if err := openCollectionErr(t, before, testOpts()); !errors.Is(err, ErrKeyRequired) {
		t.Fatalf("backup without KEYS, no key: %v", err)
	}
	var ids []string
	for _, r := range alice {
		ids = append(ids, r.ID)
	}
	if _, err := c.Delete(ids...); err != nil {
		t.Fatal(err)
	}
	if n, err := db.ReleaseSessionKeys("alice", "bob", "nobody"); err != nil || n != 1 {
		t.Fatalf("ReleaseSessionKeys = %d, %v; want alice's key only", n, err)
	}
	expectRecords(t, c, bob)
	for _, cfg := range db.Collections() {
		c, _ := db.Collection(cfg.Name)
		for _, s := range c.segs {
			if len(s.sf.keyIDs) != 1 {
				t.Fatalf("live file %s sealed with %d session keys, want bob's alone", s.sf.path, len(s.sf.keyIDs))
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir, encOpts(k))
	c, _ = db.Collection("notes")
	expectRecords(t, c, bob)
	db.Close()

	copyKeys(t, dir, before)
	err := openCollectionErr(t, before, encOpts(k))
	if !errors.Is(err, ErrKeyDestroyed) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("backup from before the purge, current keys: %v", err)
	}
	if _, err := Repair(before, encOpts(k)); err != nil {
		t.Fatal(err)
	}
	bk := openT(t, before, encOpts(k))
	bc, _ := bk.Collection("notes")
	for _, r := range alice {
		if _, err := bc.Get(r.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("purged record %s in the repaired backup: %v", r.ID, err)
		}
	}
	bk.Close()
	// A backup taken with its keys keeps what they opened: what the
	// user asked for.
	wk := openT(t, withKeys, encOpts(k))
	wc, _ := wk.Collection("notes")
	expectRecords(t, wc, recs)
	wk.Close()
}

// FuzzSealedSegment: any bytes given as a sealed segment file are
// refused with an error (or, for the real file, opened), never a panic or
// an allocation beyond the file's size.
func FuzzSealedSegment(f *testing.F) {
	k := testKey("fuzz sealed")
	dir := filepath.Join(f.TempDir(), "store")
	db := openT(f, dir, encOpts(k))
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.L2, Fingerprint: "fp"})
	if err != nil {
		f.Fatal(err)
	}
	if err := c.Upsert(ctx, secretRecords("alice", 3)); err != nil {
		f.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		f.Fatal(err)
	}
	keys := db.keys
	segs, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
	good, _ := os.ReadFile(segs[0])
	db.Close()
	f.Add(good)
	f.Add(good[:60])
	f.Add([]byte(sealedSegMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !isSealedSegment(bytes.NewReader(b)) {
			return
		}
		for _, tolerant := range []bool{false, true} {
			sb, err := unseal(b, keys, tolerant)
			if err == nil {
				if len(sb.data) > len(b) {
					t.Fatalf("image of %d bytes from a file of %d", len(sb.data), len(b))
				}
				if !tolerant && !bytes.Equal(b, good) {
					t.Fatal("altered file opened")
				}
				sb.release()
			}
		}
	})
}
