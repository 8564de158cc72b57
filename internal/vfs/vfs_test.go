package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// exercise runs the same checks against any FS rooted at dir.
func exercise(t *testing.T, fsys FS, dir string) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Join(dir, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "a", "f")
	f, err := fsys.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("O_EXCL on existing file: %v", err)
	}
	if _, err := fsys.OpenFile(filepath.Join(dir, "missing"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing: %v", err)
	}
	for _, s := range []string{"hello ", "world"} {
		if n, err := f.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 6); n != 5 || (err != nil && err != io.EOF) || string(buf) != "world" {
		t.Fatalf("ReadAt: %d %v %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 9); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt past end: %d %v", n, err)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("!")) // O_APPEND writes at the new end
	if fi, err := f.Stat(); err != nil || fi.Size() != 6 {
		t.Fatalf("Stat after truncate+append: %v %v", fi, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(p, filepath.Join(dir, "a", "g")); err != nil {
		t.Fatal(err)
	}
	names, err := fsys.ReadDir(filepath.Join(dir, "a"))
	if err != nil || len(names) != 2 || names[0] != "b" || names[1] != "g" {
		t.Fatalf("ReadDir: %v %v", names, err)
	}
	if err := fsys.SyncDir(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	r, err := fsys.OpenFile(filepath.Join(dir, "a", "g"), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := r.ReadAt(got, 0); err != nil && err != io.EOF || string(got) != "hello!" {
		t.Fatalf("content %q, %v", got, err)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Fatal("write to a read-only file succeeded")
	}
	data, unmap, err := Map(r)
	if err != nil || string(data) != "hello!" {
		t.Fatalf("Map: %q %v", data, err)
	}
	if err := unmap(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if fi, err := fsys.Stat(filepath.Join(dir, "a", "g")); err != nil || fi.IsDir() || fi.Size() != 6 || !fi.Mode().IsRegular() {
		t.Fatalf("Stat file: %v %v", fi, err)
	}
	if fi, err := fsys.Stat(filepath.Join(dir, "a", "b")); err != nil || !fi.IsDir() {
		t.Fatalf("Stat dir: %v %v", fi, err)
	}
	if _, err := fsys.Stat(filepath.Join(dir, "a", "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat missing: %v", err)
	}
	e, err := fsys.OpenFile(filepath.Join(dir, "a", "empty"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if data, unmap, err := Map(e); err != nil || len(data) != 0 || unmap() != nil {
		t.Fatalf("Map of an empty file: %q %v", data, err)
	}
	e.Close()
	fsys.Remove(filepath.Join(dir, "a", "empty"))
	if err := fsys.Remove(filepath.Join(dir, "a", "g")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(filepath.Join(dir, "a", "g")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestOS(t *testing.T) {
	dir := t.TempDir()
	exercise(t, OS, dir)
	f, err := OS.OpenFile(filepath.Join(dir, "fd"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(interface{ Fd() uintptr }); !ok {
		t.Fatal("OS files must expose Fd for mmap")
	}
}

func TestMem(t *testing.T) { exercise(t, NewMem(), "/root") }

// TestMapIsASnapshot: a MemFS mapping does not change under later writes
// (callers map files nobody writes; a view that moved would hide bugs).
func TestMapIsASnapshot(t *testing.T) {
	m := NewMem()
	f, _ := m.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0o600)
	f.Write([]byte("abc"))
	data, _, err := Map(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("def"))
	if string(data) != "abc" {
		t.Fatalf("mapping changed: %q", data)
	}
	// A File that is not a Mapper is read into a copy.
	data, _, err = Map(struct{ File }{f})
	if err != nil || string(data) != "abcdef" {
		t.Fatalf("fallback Map: %q %v", data, err)
	}
}

func TestMemLock(t *testing.T) {
	m := NewMem()
	l, err := m.Lock("/d/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lock("/d/LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}
	if _, err := m.Crash().Lock("/d/LOCK"); err != nil {
		t.Fatalf("a crash kept the lock: %v", err)
	}
	l.Close()
	l.Close() // idempotent
	l2, err := m.Lock("/d/LOCK")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

func TestMemCrash(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o700)
	write := func(name, s string, sync bool) File {
		f, err := m.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(s))
		if sync {
			f.Sync()
		}
		return f
	}
	a := write("/d/a", "durable", true)
	m.SyncDir("/d")
	a.Write([]byte(" lost")) // never synced
	write("/d/b", "synced data, entry not synced", true)
	c := m.Crash()
	if got, _ := c.Bytes("/d/a"); string(got) != "durable" {
		t.Fatalf("a after crash: %q", got)
	}
	if _, err := c.Bytes("/d/b"); err == nil {
		t.Fatal("a file whose directory entry was never synced survived")
	}
	if got, _ := m.Bytes("/d/a"); string(got) != "durable lost" {
		t.Fatalf("the crash changed the original: %q", got)
	}
	// A removal is durable only after SyncDir too.
	m.Remove("/d/a")
	if _, err := m.Crash().Bytes("/d/a"); err != nil {
		t.Fatal("an unsynced removal was durable")
	}
	m.SyncDir("/d")
	if _, err := m.Crash().Bytes("/d/a"); err == nil {
		t.Fatal("a synced removal was undone")
	}
}

// TestMemRequireDirSync: a new directory, and the files in it, survive a
// crash only once its parent is synced; so does a removal.
func TestMemRequireDirSync(t *testing.T) {
	m := NewMem()
	m.RequireDirSync()
	m.MkdirAll("/a/b", 0o700)
	f, _ := m.OpenFile("/a/b/f", os.O_CREATE|os.O_RDWR, 0o600)
	f.Write([]byte("x"))
	f.Sync()
	m.SyncDir("/a/b")
	if _, err := m.Crash().Stat("/a"); err == nil {
		t.Fatal("an unsynced directory survived")
	}
	m.SyncDir("/")
	if c := m.Crash(); !exists(c, "/a") || exists(c, "/a/b") || exists(c, "/a/b/f") {
		t.Fatal("/a synced, /a/b not: only /a may survive")
	}
	m.SyncDir("/a")
	if got, err := m.Crash().Bytes("/a/b/f"); err != nil || string(got) != "x" {
		t.Fatalf("after syncing every parent: %q %v", got, err)
	}
	m.Remove("/a/b/f")
	m.SyncDir("/a/b")
	m.Remove("/a/b")
	if !exists(m.Crash(), "/a/b") {
		t.Fatal("an unsynced directory removal was durable")
	}
	m.SyncDir("/a")
	if exists(m.Crash(), "/a/b") {
		t.Fatal("a synced directory removal was undone")
	}
}

func exists(fsys FS, name string) bool { _, err := fsys.Stat(name); return err == nil }

func TestMemInjectError(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o700)
	f, _ := m.OpenFile("/d/f", os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	m.InjectError(OpWrite, "/d/f", 1, syscall.ENOSPC)
	if _, err := f.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	n, err := f.Write([]byte("abcd"))
	if !errors.Is(err, syscall.ENOSPC) || n != 2 {
		t.Fatalf("injected write: %d %v", n, err)
	}
	if got, _ := m.Bytes("/d/f"); !bytes.Equal(got, []byte("okab")) {
		t.Fatalf("short write left %q", got)
	}
	if _, err := f.Write([]byte("!")); err != nil {
		t.Fatalf("the fault fired twice: %v", err)
	}
	m.InjectError(OpSync, "", 0, syscall.EIO)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	if _, err := m.Crash().Bytes("/d/f"); err == nil {
		t.Fatal("nothing was synced, yet the file survived")
	}
	m.InjectError(OpSyncDir, "/d", 0, syscall.EIO)
	if err := m.SyncDir("/d"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("syncdir: %v", err)
	}
	m.InjectError(OpOpen, "/d/g", 0, syscall.ENOSPC)
	if _, err := m.OpenFile("/d/g", os.O_CREATE|os.O_RDWR, 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("open: %v", err)
	}
	f.Close()
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("write after close succeeded")
	}
}

func TestFull(t *testing.T) {
	mem := NewMem()
	full := NewFull(mem)
	f, err := full.OpenFile("/a", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abcd")); err != nil {
		t.Fatal(err)
	}
	full.SetFull(true)
	if n, err := f.Write([]byte("efgh")); n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %d %v, want a short write and ENOSPC", n, err)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatalf("truncate on a full disk: %v", err)
	}
	full.SetFull(false)
	if _, err := f.Write([]byte("ij")); err != nil {
		t.Fatal(err)
	}
	if b, _ := mem.Bytes("/a"); string(b) != "abcdij" || full.Failed() != 1 {
		t.Fatalf("contents %q, %d failed writes", b, full.Failed())
	}
	data, unmap, err := Map(f)
	if err != nil || string(data) != "abcdij" {
		t.Fatalf("Map through FullFS: %q %v", data, err)
	}
	unmap()
}

// TestMemSyncKeepsWhatWasSynced: Sync copies only what changed since the
// last one; after random writes, in-place writes, truncations and syncs a
// crash must keep exactly the contents at the last Sync.
func TestMemSyncKeepsWhatWasSynced(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		m := NewMem()
		f, _ := m.OpenFile("/f", os.O_CREATE|os.O_RDWR, 0o600)
		m.SyncDir("/")
		var want []byte
		for range 30 {
			switch r.IntN(4) {
			case 0:
				b := bytes.Repeat([]byte{byte(r.IntN(256))}, 1+r.IntN(40))
				f.Write(b)
			case 1:
				b := bytes.Repeat([]byte{byte(r.IntN(256))}, 1+r.IntN(40))
				f.WriteAt(b, int64(r.IntN(200)))
			case 2:
				f.Truncate(int64(r.IntN(200)))
			default:
				f.Sync()
				want, _ = m.Bytes("/f")
			}
		}
		got, _ := m.Crash().Bytes("/f")
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: crash kept %d bytes, differing from the %d synced", round, len(got), len(want))
		}
	}
}
