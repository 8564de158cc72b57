package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/quant"
	"github.com/engramdb/engram/wal"
)

func TestRepair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	r := rand.New(rand.NewPCG(8, 9))
	a, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
	b, _ := db.CreateCollection(CollectionConfig{Name: "b", Dim: 4, Metric: quant.L2})
	a.Upsert(ctx, mkRecords(r, 4, 0, 30))
	b.Upsert(ctx, mkRecords(r, 4, 0, 30))
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// 40 WAL records after the checkpoint, one record each.
	for i := range 40 {
		if err := b.Upsert(ctx, mkRecords(r, 4, 100+i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	db.noCloseFlush = true
	db.Close()
	// A healthy store: nothing changes.
	before := snapshotDir(t, dir)
	rep, err := Repair(dir, Options{})
	if err != nil || len(rep.WALLost) != 0 || len(rep.QuarantinedSegments) != 0 {
		t.Fatalf("Repair of a healthy store = %+v, %v", rep, err)
	}
	if after := snapshotDir(t, dir); !sameSnapshot(before, after) {
		t.Fatal("Repair changed a healthy store")
	}
	// Damage segment a's graph header (derived: the graph is rebuilt from
	// the vectors, which the record checksums prove intact) and the middle
	// of the WAL.
	segA := filepath.Join(dir, "seg", segName(1))
	flipByte(t, segA, 200)
	walFiles, _ := os.ReadDir(filepath.Join(dir, "wal"))
	walPath := filepath.Join(dir, "wal", walFiles[len(walFiles)-1].Name())
	// Segments are preallocated: aim at the middle of the written records.
	walBytes, _ := os.ReadFile(walPath)
	end := len(walBytes)
	for end > 0 && walBytes[end-1] == 0 {
		end--
	}
	flipByte(t, walPath, end/2)
	if _, err := Open(dir, testOpts()); err == nil {
		t.Fatal("Open accepted a WAL damaged in the middle")
	} else if ce := new(wal.CorruptionError); !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want a wal.CorruptionError matching ErrCorrupt", err)
	}
	rep, err = Repair(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.WALLost) == 0 || len(rep.RebuiltSegments) != 1 || rep.RebuiltSegments[0] != segA || rep.DroppedRecords != 0 ||
		len(rep.QuarantinedSegments) != 0 || len(rep.LostRecords) != 0 {
		t.Fatalf("Repair = %+v", rep)
	}
	if _, err := os.Stat(segA); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the damaged file is still there after its records were rewritten: %v", err)
	}
	db = openT(t, dir, testOpts())
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	a, _ = db.Collection("a")
	if n, _ := a.Count(nil); n != 30 {
		t.Fatalf("collection a has %d records after its graph was rebuilt, want 30", n)
	}
	b, _ = db.Collection("b")
	n, _ := b.Count(nil)
	if n != 30+39 {
		t.Fatalf("collection b has %d records; want the flushed 30 plus the 39 intact WAL records", n)
	}
	missing := 0
	for i := range 40 {
		if _, err := b.Get(mkRecords(r, 4, 100+i, 1)[0].ID); err != nil {
			missing++
		}
	}
	if missing != 1 || len(rep.WALLost) != 1 {
		t.Fatalf("%d WAL records lost (report %+v), want only the damaged one", missing, rep.WALLost)
	}
	if _, err := Repair(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair of an open store = %v", err)
	}
}

func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[off] ^= 0x20
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && info.Name() != "LOCK" {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		}
		return nil
	})
	return out
}

func sameSnapshot(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestReplayCorrupt: a WAL record that frames and checksums fine but does
// not decode, or names a collection the manifest lacks, is ErrCorrupt.
func TestReplayCorrupt(t *testing.T) {
	leaveDamaged(t)
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	db.noCloseFlush = true
	if _, err := db.log.Append([]byte{0xff, 1, 2}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(dir, testOpts())
	var ce *CorruptionError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("Open with an undecodable WAL record = %v, want ErrCorrupt", err)
	}
}
