package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"
)

// FS is the file system as the storage packages use it. Paths are plain
// OS-style paths; implementations need not support anything else.
type FS interface {
	// OpenFile opens name with os.OpenFile semantics for flag and perm
	// (O_RDONLY, O_RDWR, O_WRONLY, O_CREATE, O_EXCL, O_TRUNC, O_APPEND).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// ReadDir returns the names of the entries of dir, sorted.
	ReadDir(dir string) ([]string, error)
	// MkdirAll creates dir and any missing parents with perm.
	MkdirAll(dir string, perm fs.FileMode) error
	// SyncDir makes the creations, removals and renames of entries in dir
	// durable.
	SyncDir(dir string) error
}

// File is an open file.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync makes the file's data durable (fdatasync where available: the
	// size is made durable too, other metadata need not be).
	Sync() error
	// Truncate changes the size of the file.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (fs.FileInfo, error)
}

// OS is the FS of the operating system.
var OS FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string, perm fs.FileMode) error { return os.MkdirAll(dir, perm) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	// A directory's entries are metadata: fsync, not fdatasync.
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// osFile is an *os.File whose Sync is a data sync.
type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// Fd exposes the descriptor, so callers can mmap the file.
func (f osFile) Fd() uintptr { return f.File.Fd() }
