package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// recoveryStore writes a store with two segments of 20 records each in
// collection "c" and 10 records in the WAL after the checkpoint, closed
// without a final flush.
func recoveryStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	r := rand.New(rand.NewPCG(3, 4))
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: 4, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := c.Upsert(ctx, mkRecords(r, 4, 20*i, 20)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := c.Upsert(ctx, mkRecords(r, 4, 40+i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	db.noCloseFlush = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenKeepsUnknownFiles(t *testing.T) {
	dir := recoveryStore(t)
	foreign := []string{"seg/notes.txt", "seg/bk/00000001.seg", "wal/README", "wal/old/00000001", "seg/00000099.seg.bak"}
	for _, f := range foreign {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("mine"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A leftover temporary of a crashed flush is the engine's own: removed.
	stale := filepath.Join(dir, "seg", segName(77)+".tmp")
	os.WriteFile(stale, []byte("half a segment"), 0o600)
	db := openT(t, dir, testOpts())
	c, _ := db.Collection("c")
	if n, _ := c.Count(nil); n != 50 {
		t.Fatalf("Count = %d, want 50", n)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatalf("Check with foreign files: %v", err)
	}
	db.Close()
	for _, f := range foreign {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != "mine" {
			t.Fatalf("%s after open, flush, close: %q, %v", f, b, err)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("a stale segment temporary survived open")
	}
	got, err := UnknownFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"seg/00000099.seg.bak", "seg/bk", "seg/notes.txt", "wal/README", "wal/old"}
	if !slices.Equal(got, want) {
		t.Fatalf("UnknownFiles = %q, want %q", got, want)
	}
	if _, err := Repair(dir, Options{}); err != nil {
		t.Fatalf("Repair with foreign files: %v", err)
	}
	for _, f := range foreign {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("Repair removed %s", f)
		}
	}
}

func TestMissingManifestIsNotNewStore(t *testing.T) {
	leaveDamaged(t)
	dir := recoveryStore(t)
	for _, f := range append(manifestFiles(t, dir), filepath.Join(dir, currentName)) {
		os.Remove(f)
	}
	before := snapshotDir(t, dir)
	var ce *CorruptionError
	if _, err := Open(dir, testOpts()); !errors.As(err, &ce) || ce.File != filepath.Join(dir, manifestFileName(1)) {
		t.Fatalf("Open without MANIFEST = %v, want a CorruptionError naming it", err)
	}
	if after := snapshotDir(t, dir); !sameSnapshot(before, after) {
		t.Fatal("Open changed a store that lost its manifest")
	}
	// A crashed creation (LOCK, maybe MANIFEST.tmp, empty seg/ and wal/)
	// is still a new store.
	fresh := filepath.Join(t.TempDir(), "f")
	os.MkdirAll(filepath.Join(fresh, "seg"), 0o700)
	os.MkdirAll(filepath.Join(fresh, "wal"), 0o700)
	os.WriteFile(filepath.Join(fresh, "LOCK"), nil, 0o600)
	openT(t, fresh, testOpts()).Close()
}

func TestRepairMissingSegment(t *testing.T) {
	dir := recoveryStore(t)
	lost := filepath.Join(dir, "seg", segName(1))
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}
	// Open serves nothing from the collection that lost a file; Check says so.
	if db, err := Open(dir, testOpts()); err == nil {
		if db.Check() == nil {
			t.Error("Check passed with a missing segment file")
		}
		db.Close()
	}
	rep, err := Repair(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.MissingSegments, []string{lost}) || rep.DroppedRecords != 20 {
		t.Fatalf("Repair = %+v", rep)
	}
	db := openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	c, _ := db.Collection("c")
	if n, _ := c.Count(nil); n != 30 {
		t.Fatalf("Count = %d, want the 30 records outside the lost segment", n)
	}
}

func TestBackupRefusesTargetInsideStore(t *testing.T) {
	dir := recoveryStore(t)
	db := openT(t, dir, testOpts())
	defer db.Close()
	for _, target := range []string{dir, filepath.Join(dir, "seg", "bk"), filepath.Join(dir, "wal"), filepath.Join(dir, "x", "y")} {
		if err := db.Backup(target); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Backup(%s) = %v, want ErrInvalid", target, err)
		}
	}
	// Through a symbolic link too.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skip(err)
	}
	if err := db.Backup(filepath.Join(link, "bk")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Backup through a link = %v, want ErrInvalid", err)
	}
	if got, _ := UnknownFiles(dir); len(got) != 0 {
		t.Fatalf("refused backups left %q", got)
	}
	if err := db.Backup(filepath.Join(t.TempDir(), "bk")); err != nil {
		t.Fatal(err)
	}
}
