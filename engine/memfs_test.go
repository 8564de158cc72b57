package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/engramdb/engram/internal/vfs"
)

// TestMemFSStore runs a store wholly on a vfs.MemFS: every file the engine
// reads, maps, lists or locks goes through Options.FS, so nothing reaches
// the OS, and a second handle on the same MemFS is refused.
func TestMemFSStore(t *testing.T) {
	const dir = "/engram-memfs-test/store" // must never appear on the OS
	mem := vfs.NewMem()
	opts := Options{FS: mem, FlushBytes: -1, CompactInterval: -1}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, opts); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open on the same MemFS: %v", err)
	}
	c, err := db.CreateCollection(crashCfg)
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]int{}
	for i := range 3 {
		var recs []Record
		for j := range 20 {
			id := fmt.Sprintf("r%d", (i*20+j)%45)
			recs = append(recs, Record{ID: id, Vector: crashVec(id, i), Text: fmt.Sprintf("%s v%d", id, i)})
			model[id] = i
		}
		if err := c.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Delete("r1", "r2"); err != nil {
		t.Fatal(err)
	}
	delete(model, "r1")
	delete(model, "r2")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.KV().Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the store reached the OS: %v", err)
	}
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if err := crashStateMatches(db, model, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if u, err := unknownFiles(mem, dir); err != nil || len(u) != 0 {
		t.Fatalf("unknown files %v, %v", u, err)
	}
	if st := db.Stats(); st.WALBytes == 0 {
		t.Fatalf("Stats: %+v", st)
	}
	if err := db.Backup("/engram-memfs-test/backup"); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/engram-memfs-test/backup/seg"); err != nil {
		t.Fatalf("backup: %v", err)
	}
}

// TestNewDirectoriesAreSynced: a store's directory, seg/ and wal/ (and a
// backup's) are synced into their parents when made, so a power loss right
// after the first acknowledged write keeps it (found by TestPowerLoss with
// MemFS.RequireDirSync: the store came back empty).
func TestNewDirectoriesAreSynced(t *testing.T) {
	mem := vfs.NewMem()
	mem.RequireDirSync()
	opts := Options{FS: mem, FlushBytes: -1, CompactInterval: -1}
	db, err := Open("/a/b/store", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateCollection(crashCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Upsert(ctx, []Record{{ID: "x", Vector: crashVec("x", 1), Text: "x v1"}}); err != nil {
		t.Fatal(err)
	}
	crashed := mem.Crash()
	if err := db.Backup("/c/d/backup"); err != nil {
		t.Fatal(err)
	}
	afterBackup := mem.Crash()
	for i, tc := range []struct {
		fs  *vfs.MemFS
		dir string
	}{{crashed, "/a/b/store"}, {afterBackup, "/a/b/store"}, {afterBackup, "/c/d/backup"}} {
		db, err := Open(tc.dir, Options{FS: tc.fs.Crash(), FlushBytes: -1, CompactInterval: -1})
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		if err := crashStateMatches(db, map[string]int{"x": 1}, nil); err != nil {
			t.Errorf("case %d: %s after a power loss: %v", i, tc.dir, err)
		}
		db.Close()
	}
}

// TestFailedCURRENTKeepsItsManifest: when CURRENT cannot be rewritten
// (ENOSPC) twice in a row, the cleanup must not remove the manifest the
// CURRENT on disk still names: the store would read as corrupt ("named by
// CURRENT, but missing") to Check, before and after a power loss. Found by
// TestPowerLossAfterIOError (seed 36).
func TestFailedCURRENTKeepsItsManifest(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, FlushBytes: -1, CompactInterval: -1, walSegSize: plWALSegment}
	db, err := Open("/s", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.CreateCollection(crashCfg)
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]int{}
	write := func(i int) {
		id := fmt.Sprintf("r%d", i)
		if err := c.Upsert(ctx, []Record{{ID: id, Vector: crashVec(id, i), Text: fmt.Sprintf("%s v%d", id, i)}}); err != nil {
			t.Fatal(err)
		}
		model[id] = i
	}
	for i := range 2 {
		write(i)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	mem.InjectError(vfs.OpOpen, "CURRENT.tmp", 0, syscall.ENOSPC)
	mem.InjectError(vfs.OpOpen, "CURRENT.tmp", 0, syscall.ENOSPC)
	for i := 2; i < 5; i++ {
		write(i)
		ferr := db.Flush()
		if err := db.Check(); err != nil {
			t.Fatalf("after flush %d (%v): Check: %v", i, ferr, err)
		}
		if err := plMatchesAt(mem, "/s", model, nil); err != nil {
			t.Fatalf("after flush %d (%v) and a power loss: %v", i, ferr, err)
		}
	}
	if err := crashStateMatches(db, model, nil); err != nil {
		t.Fatal(err)
	}
}
