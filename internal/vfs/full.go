package vfs

import (
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
)

// FullFS wraps an FS as a disk that can fill up: while SetFull(true) is in
// force every write to a file fails with ENOSPC after writing half its
// bytes, as a write that runs out of room midway does; everything else
// (reads, truncation, removal, creating empty files) works, as it does on
// a full disk. Tests use it to check that a store serves on while the disk
// is full and takes writes again, without a restart, once space is freed.
type FullFS struct {
	FS
	// Match, when set (before use), limits the failures to files whose
	// path contains it: a disk that is full for one directory only.
	Match  string
	full   atomic.Bool
	failed atomic.Int64
}

// NewFull returns a FullFS over fsys, not full.
func NewFull(fsys FS) *FullFS { return &FullFS{FS: fsys} }

// SetFull fills the disk (true) or frees space (false).
func (f *FullFS) SetFull(full bool) { f.full.Store(full) }

// Failed returns how many writes failed with ENOSPC so far.
func (f *FullFS) Failed() int64 { return f.failed.Load() }

// OpenFile implements FS.
func (f *FullFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: file, fs: f, name: name}, nil
}

type fullFile struct {
	File
	fs   *FullFS
	name string
}

func (f *fullFile) Write(p []byte) (int, error) {
	if !f.fs.full.Load() || !strings.Contains(f.name, f.fs.Match) {
		return f.File.Write(p)
	}
	f.fs.failed.Add(1)
	n, _ := f.File.Write(p[:len(p)/2])
	return n, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
}

// WriteAt fails like Write (the WAL writes its preallocated segments in
// place).
func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	if !f.fs.full.Load() || !strings.Contains(f.name, f.fs.Match) {
		return f.File.WriteAt(p, off)
	}
	f.fs.failed.Add(1)
	n, _ := f.File.WriteAt(p[:len(p)/2], off)
	return n, &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
}

// Map passes the wrapped file's mapping through (or its copy; see Map).
func (f *fullFile) Map() ([]byte, func() error, error) { return Map(f.File) }
