package engine

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/engramdb/engram/quant"
)

// TestDiskFullRecovers is the reported scenario: the disk fills up under a
// running store (every write to any of its files fails with ENOSPC after
// writing half its bytes) and stays full for a while. Every write fails
// with an error that says so and changes nothing; reads keep working; once
// space is freed the very next write succeeds on the same DB, without a
// reopen, and what was acknowledged, before and after, is all there, also
// after a reopen, while nothing that failed ever shows up.
func TestDiskFullRecovers(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run(map[bool]string{true: "sync", false: "nosync"}[sync], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			ffs := &faultFS{FS: vfs.OS, match: dir}
			opts := testOpts()
			opts.UnsafeNoSync = !sync
			opts.FS = ffs
			db := openT(t, dir, opts)
			defer func() {
				if db != nil {
					db.Close()
				}
			}()
			c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(7, 8))
			acked := mkRecords(r, 4, 0, 60)
			if err := c.Upsert(ctx, acked[:40]); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := c.Upsert(ctx, acked[40:]); err != nil { // in the WAL only
				t.Fatal(err)
			}
			at := time.Unix(5000, 0).UTC()
			if err := c.Touch([]string{"r00001"}, at); err != nil {
				t.Fatal(err)
			}
			if err := db.KV().Put("k", []byte("v1")); err != nil {
				t.Fatal(err)
			}

			ffs.armed.Store(true)
			var failedIDs []string
			for i := range 3 { // full for a while: every attempt fails
				batch := mkRecords(r, 4, 100+10*i, 5)
				if err := c.Upsert(ctx, batch); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("upsert %d on a full disk: %v, want ENOSPC", i, err)
				}
				for _, rec := range batch {
					failedIDs = append(failedIDs, rec.ID)
				}
			}
			if err := c.Touch([]string{"r00001", "r00050"}, at.Add(time.Hour)); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("touch on a full disk: %v", err)
			}
			if err := db.KV().Put("k", []byte("v2")); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("KV put on a full disk: %v", err)
			}
			if _, err := c.Delete("r00002"); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("delete on a full disk: %v", err)
			}
			if err := db.Flush(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("flush on a full disk: %v", err)
			}
			if err := db.Compact(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("compact on a full disk: %v", err)
			}
			// Nothing of the failed writes is applied; reads keep working.
			check := func(when string) {
				t.Helper()
				for _, id := range failedIDs {
					if _, err := c.Get(id); !errors.Is(err, ErrNotFound) {
						t.Fatalf("%s: failed upsert %s is visible: %v", when, id, err)
					}
				}
				for _, rec := range acked {
					got, err := c.Get(rec.ID)
					if err != nil || got.Text != rec.Text {
						t.Fatalf("%s: acknowledged %s: %v %q", when, rec.ID, err, got.Text)
					}
				}
				if got, _ := c.Get("r00001"); got.AccessCount != 1 || !got.LastAccess.Equal(at) {
					t.Fatalf("%s: access stats of r00001 = %d %v, want the acknowledged touch only", when, got.AccessCount, got.LastAccess)
				}
				if got, _ := c.Get("r00050"); got.AccessCount != 0 {
					t.Fatalf("%s: failed touch counted: %d", when, got.AccessCount)
				}
				if v, err := db.KV().Get("k"); err != nil || string(v) != "v1" {
					t.Fatalf("%s: KV k = %q %v, want v1", when, v, err)
				}
			}
			check("while full")
			if hits, err := c.Search(ctx, SearchRequest{Vector: []float32{1, 0, 0, 0}, K: 5}); err != nil || len(hits) != 5 {
				t.Fatalf("search while full: %d hits, %v", len(hits), err)
			}

			ffs.armed.Store(false) // space freed
			more := mkRecords(r, 4, 200, 5)
			if err := c.Upsert(ctx, more); err != nil {
				t.Fatalf("the first upsert after space was freed: %v", err)
			}
			acked = append(acked, more...)
			check("after recovery")
			if err := db.KV().Put("k2", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatalf("flush after recovery: %v", err)
			}
			if err := db.Compact(); err != nil {
				t.Fatalf("compact after recovery: %v", err)
			}
			extra := mkRecords(r, 4, 300, 3) // in the WAL at the reopen
			if err := c.Upsert(ctx, extra); err != nil {
				t.Fatal(err)
			}
			acked = append(acked, extra...)
			if err := db.Close(); err != nil {
				t.Fatalf("close after recovery: %v", err)
			}
			db = openT(t, dir, testOpts())
			if err := db.Check(); err != nil {
				t.Fatal(err)
			}
			if c, err = db.Collection("a"); err != nil {
				t.Fatal(err)
			}
			check("after reopen")
		})
	}
}

// syncFaultFS fails every file sync with ENOSPC while armed, after the
// write went through: the record is whole in the file when its append fails
// (a delayed-allocation file system reports a full disk at fsync).
type syncFaultFS struct {
	vfs.FS
	armed atomic.Bool
}

type syncFaultFile struct {
	vfs.File
	fs *syncFaultFS
}

func (f *syncFaultFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &syncFaultFile{File: file, fs: f}, nil
}

func (f *syncFaultFile) Sync() error {
	if f.fs.armed.Load() {
		return &fs.PathError{Op: "sync", Path: "file", Err: syscall.ENOSPC}
	}
	return f.File.Sync()
}

// TestDiskFullCrashBeforeRecovery: a process killed while the disk is
// still full (after failed writes, before any write succeeded) leaves a
// store that opens with every acknowledged write and none of the failed
// ones: each failed WAL write was undone before its error was returned,
// even one that reached the file whole and failed at its sync.
func TestDiskFullCrashBeforeRecovery(t *testing.T) {
	for _, at := range []string{"write", "sync"} {
		t.Run(at, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			wfs := &faultFS{FS: vfs.OS, match: dir}
			sfs := &syncFaultFS{FS: wfs}
			opts := testOpts()
			opts.UnsafeNoSync = false
			opts.FS = sfs
			db := openT(t, dir, opts)
			db.noCloseFlush = true // Close leaves the WAL as a kill would
			c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(9, 9))
			acked := mkRecords(r, 4, 0, 30)
			if err := c.Upsert(ctx, acked); err != nil {
				t.Fatal(err)
			}
			if at == "write" {
				wfs.armed.Store(true)
			} else {
				sfs.armed.Store(true)
			}
			failed := mkRecords(r, 4, 100, 30)
			if err := c.Upsert(ctx, failed); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("upsert on a full disk: %v", err)
			}
			db.Close()
			db = openT(t, dir, testOpts())
			defer db.Close()
			if c, err = db.Collection("a"); err != nil {
				t.Fatal(err)
			}
			for _, rec := range acked {
				if _, err := c.Get(rec.ID); err != nil {
					t.Fatalf("acknowledged %s: %v", rec.ID, err)
				}
			}
			for _, rec := range failed {
				if _, err := c.Get(rec.ID); !errors.Is(err, ErrNotFound) {
					t.Fatalf("failed upsert %s replayed after the crash: %v", rec.ID, err)
				}
			}
		})
	}
}
