package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/wal"
)

// Issue 23, items 2, 3 and 7: WAL damage that used to pass unnoticed, a
// check that wrote to the store it checked, and files that only look like
// the store's own by name.

// fileHashes returns every entry under dir (files by content hash,
// directories and links by kind), LOCK included: what a read-only
// operation must leave exactly as it found it.
func fileHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case info.IsDir():
			out[rel] = "dir"
		case !info.Mode().IsRegular():
			out[rel] = info.Mode().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			out[rel] = fmt.Sprintf("%d %s %v", len(b), hex.EncodeToString(sum[:8]), info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffHashes describes how two fileHashes differ ("" when they do not).
func diffHashes(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if w != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	slices.Sort(d)
	return strings.Join(d, ", ")
}

// newestWAL returns the path of the newest WAL segment of the store in
// dir, the LSNs of its records and the end of its intact records.
func newestWAL(t *testing.T, dir string) (string, []wal.LSN, int64) {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(dir, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	var seg uint32
	for _, n := range names {
		if s, ok := wal.ParseSegmentName(n.Name()); ok {
			seg = max(seg, s)
		}
	}
	path := filepath.Join(dir, "wal", fmt.Sprintf("%08d", seg))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := wal.NewReader(bytes.NewReader(b), int64(len(b)), seg)
	var lsns []wal.LSN
	for r.Next() {
		lsns = append(lsns, r.LSN())
	}
	if r.Err() != nil {
		t.Fatalf("%s: %v", path, r.Err())
	}
	return path, lsns, r.IntactEnd()
}

// countIn returns how many live records collection c of the store holds.
func countIn(t *testing.T, db *DB, c string) int {
	t.Helper()
	coll, err := db.Collection(c)
	if err != nil {
		t.Fatal(err)
	}
	n, err := coll.Count(nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDamagedLastWALRecordIsReported: one flipped byte in the middle of
// the last acknowledged record of the newest WAL segment. Its framing is
// whole and nothing in it is zeroed, so it is not a torn append: Open
// refuses it as corruption (writing nothing), and Repair gives the record
// up, reporting it and keeping its bytes aside. Before, Open cut it as a
// torn tail: the memory was lost without a word.
func TestDamagedLastWALRecordIsReported(t *testing.T) {
	dir := recoveryStore(t)
	path, lsns, end := newestWAL(t, dir)
	last := lsns[len(lsns)-1]
	mid := int(last.Offset() + (end-last.Offset())/2)
	flipByte(t, path, mid)
	before := fileHashes(t, dir)
	if _, err := Open(dir, testOpts()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt for a damaged acknowledged record", err)
	}
	if d := diffHashes(before, fileHashes(t, dir)); d != "" {
		t.Fatalf("the refused Open changed the store: %s", d)
	}
	rep, err := Repair(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.WALLost) != 1 || rep.WALLost[0].LSN != last {
		t.Fatalf("WALLost = %+v, want the record at %v", rep.WALLost, last)
	}
	db := openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if n := countIn(t, db, "c"); n != 49 {
		t.Fatalf("Count = %d, want 49 (the damaged record lost)", n)
	}
}

// TestEmptiedNewestWALSegment: a newest WAL segment cut to fewer bytes than
// its header (emptied, or one byte left) lost the records it held. Segments
// are created whole under a temporary name, so that is truncation, never a
// torn creation: Open refuses it, Repair reports the loss. Before, Open
// took it for a torn header and the records were gone without a word.
func TestEmptiedNewestWALSegment(t *testing.T) {
	for _, keep := range []int{0, 1, 15} {
		t.Run(fmt.Sprintf("%d bytes", keep), func(t *testing.T) {
			dir := recoveryStore(t)
			path, lsns, _ := newestWAL(t, dir)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b[:keep], 0o600); err != nil {
				t.Fatal(err)
			}
			before := fileHashes(t, dir)
			if _, err := Open(dir, testOpts()); !errors.Is(err, ErrCorrupt) || !errors.Is(err, wal.ErrTruncated) {
				t.Fatalf("Open = %v, want ErrCorrupt and wal.ErrTruncated", err)
			}
			if d := diffHashes(before, fileHashes(t, dir)); d != "" {
				t.Fatalf("the refused Open changed the store: %s", d)
			}
			rep, err := Repair(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.WALLost) == 0 || rep.WALLost[0].LSN != lsns[0] {
				t.Fatalf("WALLost = %+v, want the loss from %v", rep.WALLost, lsns[0])
			}
			db := openT(t, dir, testOpts())
			defer db.Close()
			if err := db.Check(); err != nil {
				t.Fatal(err)
			}
			if n := countIn(t, db, "c"); n != 40 {
				t.Fatalf("Count = %d, want the 40 flushed records", n)
			}
		})
	}
}

// TestFreshEmptyWALSegmentOpens: the segment a flush rolls to holds only
// its header and zeros: a clean, empty end, never truncation.
func TestFreshEmptyWALSegmentOpens(t *testing.T) {
	dir := recoveryStore(t)
	db := openT(t, dir, testOpts())
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, lsns, end := newestWAL(t, dir); len(lsns) != 0 || end != 16 {
		t.Fatalf("newest WAL segment holds %d records, ends at %d: want a fresh one", len(lsns), end)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if n := countIn(t, db, "c"); n != 50 {
		t.Fatalf("Count = %d, want 50", n)
	}
}

// TestCheckReportsUnreplayableFallback: the previous manifest is a
// fallback only while the WAL from its checkpoint on is there. Deleting
// the segment it starts replaying from leaves the store opening (the
// newest manifest does not need it), but the fallback is gone: Check says
// so, and Repair drops the fallback (nothing is lost).
func TestCheckReportsUnreplayableFallback(t *testing.T) {
	dir := recoveryStore(t)
	st, err := loadManifests(vfs.OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	var fallback *manifest
	for num, m := range st.readable {
		if num != st.num {
			fallback = m
		}
	}
	if fallback == nil || walIgnoreBefore(fallback) >= walIgnoreBefore(st.m) {
		t.Fatalf("layout: no fallback manifest reading the WAL before the current one")
	}
	gone := filepath.Join(dir, "wal", fmt.Sprintf("%08d", walIgnoreBefore(fallback)))
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	// (A writable open would heal it when it closes: its flush writes a
	// manifest, and the broken one is no longer kept.)
	_, err = CheckDir(dir, testOpts(), nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != gone {
		t.Fatalf("CheckDir = %v, want a CorruptionError naming %s", err, gone)
	}
	db := openT(t, dir, testOpts())
	err = db.Check()
	db.noCloseFlush = true
	db.Close()
	if !errors.As(err, &ce) || ce.File != gone {
		t.Fatalf("Check = %v, want a CorruptionError naming %s", err, gone)
	}
	rep, err := Repair(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.UnusableFallback) != 1 {
		t.Fatalf("Repair = %+v, want the fallback manifest dropped", rep)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("Check after Repair: %v", err)
	}
	if n := countIn(t, db, "c"); n != 50 {
		t.Fatalf("Count = %d, want 50", n)
	}
}

// TestForeignFilesNamedLikeStoreFiles: files that are named like a WAL
// segment or a segment file but hold something else (random bytes here)
// are not the store's: they never make it unopenable, are never read as
// its data and never deleted (a WAL one is set aside under a name of its
// own), and they are reported. Before, wal/00000009 made the store
// unopenable ("missing segment", and Repair created 00000004..8 and then
// failed), and Open deleted seg/00000003.seg and seg/00000099.seg.
func TestForeignFilesNamedLikeStoreFiles(t *testing.T) {
	dir := recoveryStore(t)
	r := rand.New(rand.NewPCG(23, 7))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	foreign := map[string][]byte{
		"wal/00000009":        random(5000),
		"seg/00000003.seg":    random(3000),
		"seg/00000099.seg":    random(70000),
		"seg/00000098.seg":    nil, // empty
		"seg/00000097.seg.bk": random(100),
	}
	for f, b := range foreign {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db := openT(t, dir, testOpts())
	if n := countIn(t, db, "c"); n != 50 {
		t.Fatalf("Count = %d, want 50", n)
	}
	if err := db.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	where := func(f string) string {
		if strings.HasPrefix(f, "wal/") {
			return f + ".foreign" // set aside: the log may reach its number
		}
		return f
	}
	for f, b := range foreign {
		got, err := os.ReadFile(filepath.Join(dir, where(f)))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s: %d bytes, %v: want it kept as it was", where(f), len(got), err)
		}
	}
	u, err := UnknownFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for f := range foreign {
		if !slices.Contains(u, where(f)) {
			t.Fatalf("UnknownFiles = %q, want %s in it", u, where(f))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "wal", "00000009")); err == nil {
		t.Fatal("wal/00000009 is still under a segment's name")
	}
	// Repair on such a store (the WAL one put back) sets it aside and
	// changes nothing else.
	if err := os.Rename(filepath.Join(dir, "wal/00000009.foreign"), filepath.Join(dir, "wal/00000009")); err != nil {
		t.Fatal(err)
	}
	before := fileHashes(t, dir)
	rep, err := Repair(dir, Options{})
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if len(rep.WALLost) != 0 || len(rep.MissingWAL) != 0 || len(rep.SetAside) != 1 {
		t.Fatalf("Repair = %+v, want wal/00000009 set aside, no WAL loss", rep)
	}
	after := fileHashes(t, dir)
	if before["wal/00000009"] != after["wal/00000009.foreign"] {
		t.Fatal("Repair did not set wal/00000009 aside as it was")
	}
	delete(before, "wal/00000009")
	delete(after, "wal/00000009.foreign")
	if d := diffHashes(before, after); d != "" {
		t.Fatalf("Repair changed a healthy store: %s", d)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	if n := countIn(t, db, "c"); n != 50 {
		t.Fatalf("Count after Repair = %d, want 50", n)
	}
}
