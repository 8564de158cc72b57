package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/quant"
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
	damaged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := fileHashes(t, dir)
	if _, err := Open(dir, testOpts()); !errors.Is(err, ErrCorrupt) || !errors.Is(err, wal.ErrDamagedRecord) {
		t.Fatalf("Open = %v, want ErrCorrupt (wal.ErrDamagedRecord) for a damaged acknowledged record", err)
	}
	if _, err := CheckDir(dir, testOpts(), nil); !errors.Is(err, wal.ErrDamagedRecord) {
		t.Fatalf("CheckDir = %v, want wal.ErrDamagedRecord", err)
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
	// Its bytes are kept aside, as Repair found them.
	kept, err := os.ReadFile(rep.WALLost[0].Saved)
	if err != nil || !bytes.Equal(kept, damaged[last.Offset():end]) {
		t.Fatalf("WALLost[0].Saved %q: %d bytes, %v; want the record's %d bytes", rep.WALLost[0].Saved, len(kept), err, end-last.Offset())
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

// TestTornWALTailIsCutAndLogged: an append whose fragment header landed
// and whose data sectors did not is a torn tail: never acknowledged, so
// nothing is lost; Open cuts it, logs it and lists it in OpenActions.
func TestTornWALTailIsCutAndLogged(t *testing.T) {
	dir := recoveryStore(t)
	path, _, end := newestWAL(t, dir)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[end], b[end+1], b[end+2], b[end+3] = 1, 0x07, 0xd0, 0x5a // a full fragment of 2000 bytes, no data
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	opts := testOpts()
	opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	db := openT(t, dir, opts)
	defer db.Close()
	if !strings.Contains(logBuf.String(), "torn tail") {
		t.Fatalf("the cut was not logged: %q", logBuf.String())
	}
	if a := db.OpenActions(); len(a) != 1 || !strings.HasPrefix(a[0], "cut the torn tail of wal/") {
		t.Fatalf("OpenActions = %q", a)
	}
	if n := countIn(t, db, "c"); n != 50 {
		t.Fatalf("Count = %d, want 50", n)
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

// TestCheckDirIsReadOnly: CheckDir (memctl check) reads a closed store and
// writes nothing, whatever it finds: every file hashes the same before and
// after (LOCK included). It says what a writable open would do instead.
// Before, check opened the store for writing: it replayed the WAL,
// flushed a segment, wrote a manifest and removed the fallback, cut a
// torn tail and deleted files it took for stale segments.
func TestCheckDirIsReadOnly(t *testing.T) {
	leaveDamaged(t)
	random := func(seed uint64, n int) []byte {
		r := rand.New(rand.NewPCG(seed, 1))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	write := func(t *testing.T, path string, b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		corrupt error    // what CheckDir must report (nil: no damage)
		actions []string // substrings of OpenActions it must report
		unknown []string
	}{
		{name: "unflushed WAL", damage: func(*testing.T, string) {},
			actions: []string{"10 WAL records written after the last flush were replayed in memory only"}},
		{name: "foreign files", damage: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "notes"), []byte("mine"))
			write(t, filepath.Join(dir, "seg", "00000003.seg"), random(1, 3000))
			write(t, filepath.Join(dir, "seg", "00000099.seg"), random(2, 3000))
			write(t, filepath.Join(dir, "wal", "00000009"), random(3, 5000))
		}, actions: []string{"would set aside wal/00000009: named like a WAL segment, but not one"},
			unknown: []string{"notes", "seg/00000003.seg", "seg/00000099.seg", "wal/00000009"}},
		{name: "damaged segment file", damage: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "seg", segName(1))
			st, _ := os.Stat(p)
			flipByte(t, p, int(st.Size()/2))
		}, corrupt: ErrCorrupt},
		{name: "damaged last WAL record", damage: func(t *testing.T, dir string) {
			path, lsns, end := newestWAL(t, dir)
			last := lsns[len(lsns)-1]
			flipByte(t, path, int(last.Offset()+(end-last.Offset())/2))
		}, corrupt: wal.ErrDamagedRecord},
		{name: "emptied newest WAL segment", damage: func(t *testing.T, dir string) {
			path, _, _ := newestWAL(t, dir)
			write(t, path, nil)
		}, corrupt: wal.ErrTruncated},
		{name: "torn WAL tail, stale segment file, manifest temporary", damage: func(t *testing.T, dir string) {
			// An append whose fragment header landed and whose data
			// sectors did not: a torn tail, which a writable open cuts.
			path, _, end := newestWAL(t, dir)
			b, _ := os.ReadFile(path)
			b[end], b[end+1], b[end+2] = 1, 0x07, 0xd0 // a full fragment of 2000 bytes
			b[end+3], b[end+4] = 0xde, 0xad
			write(t, path, b)
			seg1, _ := os.ReadFile(filepath.Join(dir, "seg", segName(1)))
			write(t, filepath.Join(dir, "seg", segName(5)), seg1)
			write(t, filepath.Join(dir, manifestFileName(9)+".tmp"), []byte("half"))
		}, actions: []string{"would cut the torn tail of wal/", "would remove seg/00000005.seg", "would remove MANIFEST-000009.tmp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := recoveryStore(t)
			tc.damage(t, dir)
			before := fileHashes(t, dir)
			rep, err := CheckDir(dir, testOpts(), nil)
			if d := diffHashes(before, fileHashes(t, dir)); d != "" {
				t.Fatalf("CheckDir changed the store: %s", d)
			}
			if tc.corrupt != nil {
				if !errors.Is(err, ErrCorrupt) || !errors.Is(err, tc.corrupt) {
					t.Fatalf("CheckDir = %v, want %v", err, tc.corrupt)
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckDir: %v", err)
			}
			all := strings.Join(rep.Actions, "\n")
			for _, a := range tc.actions {
				if !strings.Contains(all, a) {
					t.Errorf("actions %q lack %q", rep.Actions, a)
				}
			}
			for _, u := range tc.unknown {
				if !slices.Contains(rep.Unknown, u) {
					t.Errorf("unknown files %q lack %s", rep.Unknown, u)
				}
			}
			// A writable open does what CheckDir said, and loses nothing.
			db := openT(t, dir, testOpts())
			if n := countIn(t, db, "c"); n != 50 {
				t.Fatalf("Count = %d, want 50", n)
			}
			if got := db.OpenActions(); len(got) != len(rep.Actions)-1 && tc.name != "unflushed WAL" {
				t.Errorf("a writable open did %q; CheckDir said %q", got, rep.Actions)
			}
			db.Close()
			after, err := CheckDir(dir, testOpts(), nil)
			if err != nil || len(after.Actions) != 0 {
				t.Fatalf("CheckDir after a writable open: %v, actions %q", err, after.Actions)
			}
		})
	}
}

// TestCheckDirRefuses: CheckDir creates nothing where no store is, waits
// for nobody (a held store is ErrLocked), and creates only an empty LOCK
// file where it is missing, to keep writers out while it reads.
func TestCheckDirRefuses(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	if _, err := CheckDir(none, testOpts(), nil); !errors.Is(err, ErrNotStore) {
		t.Fatalf("CheckDir of a missing store = %v, want ErrNotStore", err)
	}
	if _, err := os.Stat(none); err == nil {
		t.Fatal("CheckDir created the directory")
	}
	dir := recoveryStore(t)
	db := openT(t, dir, testOpts())
	if _, err := CheckDir(dir, testOpts(), nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("CheckDir of a held store = %v, want ErrLocked", err)
	}
	db.noCloseFlush = true
	db.Close()
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
		t.Fatal(err)
	}
	before := fileHashes(t, dir)
	if _, err := CheckDir(dir, testOpts(), nil); err != nil {
		t.Fatal(err)
	}
	if d := diffHashes(before, fileHashes(t, dir)); d != "added LOCK" {
		t.Fatalf("CheckDir without LOCK: %s", d)
	}
}

// TestReadOnlyRefusesWrites: every write on a read-only handle is
// ErrReadOnly, and closing it flushes nothing.
func TestReadOnlyRefusesWrites(t *testing.T) {
	dir := recoveryStore(t)
	before := fileHashes(t, dir)
	opts := testOpts()
	opts.ReadOnly = true
	db := openT(t, dir, opts)
	c, err := db.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for name, err := range map[string]error{
		"Upsert":      c.Upsert(ctx, mkRecords(r, 4, 900, 1)),
		"Touch":       c.Touch([]string{"r00001"}, MaxTime),
		"KV Put":      db.KV().Put("k", []byte("v")),
		"Flush":       db.Flush(),
		"Compact":     db.Compact(),
		"Backup":      db.Backup(filepath.Join(t.TempDir(), "bk")),
		"SetLockNote": db.SetLockNote("x"),
		"Drop":        db.DropCollection("c"),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s = %v, want ErrReadOnly", name, err)
		}
	}
	if _, err := db.CreateCollection(CollectionConfig{Name: "x", Dim: 4, Metric: quant.L2}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CreateCollection = %v, want ErrReadOnly", err)
	}
	if n := countIn(t, db, "c"); n != 50 {
		t.Fatalf("Count = %d, want 50 (the WAL replayed in memory)", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if d := diffHashes(before, fileHashes(t, dir)); d != "" {
		t.Fatalf("a read-only handle changed the store: %s", d)
	}
}
