package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/edsrzf/mmap-go"
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
	// Stat describes the file or directory name, following symlinks.
	Stat(name string) (fs.FileInfo, error)
}

// Mapper is implemented by files that can expose their whole contents as
// a read-only byte slice without copying them (OS files: mmap).
type Mapper interface {
	// Map returns the file's contents, valid until unmap is called. The
	// caller must not write to data, nor use it after unmap.
	Map() (data []byte, unmap func() error, err error)
}

// Locker is implemented by file systems that exclude concurrent users of
// a path themselves (MemFS, in process), where the OS's flock on a real
// file cannot apply. Callers lock through it when the FS has it.
type Locker interface {
	// Lock takes an exclusive lock named name, failing with an error
	// matching ErrLocked while another holder has it. Closing the
	// returned Closer releases it.
	Lock(name string) (io.Closer, error)
}

// ErrLocked is returned by Locker.Lock for a lock already held.
var ErrLocked = errors.New("vfs: locked")

// Map returns the whole contents of f, read-only: f's own mapping where it
// is a Mapper, otherwise a copy read with ReadAt (wrappers that hide the
// Mapper still work, at the cost of a copy). unmap must be called once the
// data is no longer used.
func Map(f File) (data []byte, unmap func() error, err error) {
	if m, ok := f.(Mapper); ok {
		return m.Map()
	}
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data = make([]byte, st.Size())
	n, err := f.ReadAt(data, 0)
	if err == io.EOF && n == len(data) {
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}

// File is an open file.
type File interface {
	io.Writer
	// WriterAt writes at an offset (pwrite), leaving the position alone; a
	// file opened with O_APPEND may refuse it, as *os.File does.
	io.WriterAt
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
func (osFS) Stat(name string) (fs.FileInfo, error)       { return os.Stat(name) }

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

// Fd exposes the descriptor, for callers that need the OS file.
func (f osFile) Fd() uintptr { return f.File.Fd() }

// Map implements Mapper with a read-only shared mmap of the whole file. An
// empty file (which mmap refuses) gives an empty slice.
func (f osFile) Map() ([]byte, func() error, error) {
	st, err := f.File.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	m, err := mmap.Map(f.File, mmap.RDONLY, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return m, m.Unmap, nil
}
