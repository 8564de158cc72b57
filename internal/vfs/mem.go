package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Op names a file system operation for fault injection.
type Op string

// The operations a MemFS can be told to fail.
const (
	OpOpen     Op = "open" // OpenFile, including creation
	OpWrite    Op = "write"
	OpSync     Op = "sync"
	OpTruncate Op = "truncate"
	OpRemove   Op = "remove"
	OpRename   Op = "rename"
	OpSyncDir  Op = "syncdir"
)

// MemFS is an in-memory FS for tests. It remembers what has been made
// durable (file data by File.Sync, directory entries by SyncDir), so Crash can
// produce the state a power loss would leave, and it fails chosen operations
// on request (InjectError). Directories created by MkdirAll are durable at
// once. It is safe for concurrent use.
type MemFS struct {
	mu   sync.Mutex
	dirs map[string]bool // directories, as the running program sees them
	// stableDirs are the directories a crash keeps (with their parents):
	// all of dirs, unless dirSync asks for SyncDir of the parent first.
	stableDirs map[string]bool
	dirSync    bool
	live       map[string]*memNode // path -> file, as the running program sees it
	stable     map[string]*memNode // path -> file, as the disk has it after SyncDir
	faults     []*fault
	locks      map[string]bool // held Lock names
}

type memNode struct {
	data   []byte // what reads see (the page cache)
	synced []byte // what survives a crash; never shares data's array
	// dirtyLo and dirtyHi bound the bytes of data below len(synced) that
	// may differ from synced (dirtyLo >= dirtyHi: none), so Sync copies
	// only those and the growth: a WAL segment preallocated to megabytes
	// is synced a few hundred bytes at a time.
	dirtyLo, dirtyHi int64
}

// dirty marks data[lo:hi] as changed since the last sync. m.mu is held.
func (n *memNode) dirty(lo, hi int64) {
	if n.dirtyLo >= n.dirtyHi {
		n.dirtyLo, n.dirtyHi = lo, hi
		return
	}
	n.dirtyLo, n.dirtyHi = min(n.dirtyLo, lo), max(n.dirtyHi, hi)
}

// sync makes synced equal data. m.mu is held.
func (n *memNode) sync() {
	s := n.synced
	if len(s) > len(n.data) {
		s = s[:len(n.data)]
	}
	if hi := min(n.dirtyHi, int64(len(s))); n.dirtyLo < hi {
		copy(s[n.dirtyLo:hi], n.data[n.dirtyLo:hi])
	}
	if len(s) < len(n.data) {
		s = append(s, n.data[len(s):]...)
	}
	n.synced, n.dirtyLo, n.dirtyHi = s, 0, 0
}

type fault struct {
	op    Op
	path  string // substring of the path; "" matches all
	after int    // matching operations still allowed before the failure
	err   error
}

// NewMem returns an empty MemFS.
func NewMem() *MemFS {
	return &MemFS{dirs: map[string]bool{"/": true, ".": true}, stableDirs: map[string]bool{"/": true, ".": true},
		live: map[string]*memNode{}, stable: map[string]*memNode{}, locks: map[string]bool{}}
}

// RequireDirSync makes directories as fragile as files: a directory created
// (or removed) by MkdirAll (Remove) from now on is kept by a crash only
// once SyncDir of its parent has run, as POSIX promises no more, and a
// crash loses every file in a directory it loses. By default directories
// are durable at once.
func (m *MemFS) RequireDirSync() {
	m.mu.Lock()
	m.dirSync = true
	m.mu.Unlock()
}

// InjectError makes the operation op on a path containing pathSubstr fail
// with err once, after `after` matching operations have succeeded. A failed
// OpWrite first writes half of its bytes (a short write).
func (m *MemFS) InjectError(op Op, pathSubstr string, after int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = append(m.faults, &fault{op: op, path: pathSubstr, after: after, err: err})
}

// check returns the injected error for op on name, if one is due. m.mu is held.
func (m *MemFS) check(op Op, name string) error {
	for i, f := range m.faults {
		if f.op != op || !strings.Contains(name, f.path) {
			continue
		}
		if f.after > 0 {
			f.after--
			continue
		}
		m.faults = append(m.faults[:i], m.faults[i+1:]...)
		return &os.PathError{Op: string(op), Path: name, Err: f.err}
	}
	return nil
}

// Crash returns the file system a power loss would leave now: only entries
// made durable by SyncDir, each holding only the data made durable by
// Sync. The receiver is unchanged; files open on it stay attached to it.
func (m *MemFS) Crash() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.dirSync = m.dirSync
	var kept func(d string) bool
	kept = func(d string) bool {
		if p := filepath.Dir(d); p != d && !kept(p) {
			return false
		}
		return m.stableDirs[d]
	}
	for d := range m.stableDirs {
		if kept(d) {
			c.dirs[d], c.stableDirs[d] = true, true
		}
	}
	for p, n := range m.stable {
		if !c.dirs[filepath.Dir(p)] {
			continue // its directory did not survive
		}
		nn := &memNode{data: append([]byte(nil), n.synced...), synced: append([]byte(nil), n.synced...)}
		c.live[p] = nn
		c.stable[p] = nn
	}
	return c
}

// Bytes returns a copy of the current contents of file name.
func (m *MemFS) Bytes(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.live[filepath.Clean(name)]
	if !ok {
		return nil, &os.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), n.data...), nil
}

// SetBytes replaces the contents of file name, durably; tests use it to
// damage files.
func (m *MemFS) SetBytes(name string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.live[filepath.Clean(name)]
	if !ok {
		return &os.PathError{Op: "write", Path: name, Err: fs.ErrNotExist}
	}
	n.data = append([]byte(nil), b...)
	n.synced = append([]byte(nil), b...)
	n.dirtyLo, n.dirtyHi = 0, 0
	return nil
}

// OpenFile implements FS.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpOpen, name); err != nil {
		return nil, err
	}
	if m.dirs[name] {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	n, ok := m.live[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		if !m.dirs[filepath.Dir(name)] {
			return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		n = &memNode{}
		m.live[name] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.dirty(0, int64(len(n.data)))
		n.data = n.data[:0:0]
	}
	return &memFile{fs: m, name: name, node: n, flag: flag}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpRemove, name); err != nil {
		return err
	}
	if _, ok := m.live[name]; ok {
		delete(m.live, name)
		return nil
	}
	if m.dirs[name] {
		for p := range m.live {
			if filepath.Dir(p) == name {
				return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		delete(m.dirs, name)
		if !m.dirSync {
			delete(m.stableDirs, name)
		}
		return nil
	}
	return &os.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
}

// Rename implements FS.
func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpRename, oldname); err != nil {
		return err
	}
	n, ok := m.live[oldname]
	if !ok {
		return &os.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	if !m.dirs[filepath.Dir(newname)] {
		return &os.PathError{Op: "rename", Path: newname, Err: fs.ErrNotExist}
	}
	delete(m.live, oldname)
	m.live[newname] = n
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for p := range m.live {
		if filepath.Dir(p) == dir {
			names = append(names, filepath.Base(p))
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			names = append(names, filepath.Base(d))
		}
	}
	sort.Strings(names)
	return names, nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; !m.dirs[d]; d = filepath.Dir(d) {
		if _, ok := m.live[d]; ok {
			return &os.PathError{Op: "mkdir", Path: d, Err: errors.New("not a directory")}
		}
		m.dirs[d] = true
		if !m.dirSync {
			m.stableDirs[d] = true
		}
	}
	return nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dirs[name] {
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	n, ok := m.live[name]
	if !ok {
		return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memInfo{name: filepath.Base(name), size: int64(len(n.data))}, nil
}

// Lock implements Locker, in process: a second Lock of name fails until
// the first is released. A crash (Crash) starts with no lock held, as a
// reboot does.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[name] {
		return nil, &os.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	m.locks[name] = true
	return &memLock{fs: m, name: name}, nil
}

type memLock struct {
	fs   *MemFS
	name string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		delete(l.fs.locks, l.name)
		l.fs.mu.Unlock()
	})
	return nil
}

// SyncDir implements FS: the entries of dir become what a crash keeps.
func (m *MemFS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(OpSyncDir, dir); err != nil {
		return err
	}
	if !m.dirs[dir] {
		return &os.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	for p := range m.stable {
		if filepath.Dir(p) == dir {
			delete(m.stable, p)
		}
	}
	for p, n := range m.live {
		if filepath.Dir(p) == dir {
			m.stable[p] = n
		}
	}
	for d := range m.stableDirs {
		if d != dir && filepath.Dir(d) == dir && !m.dirs[d] {
			delete(m.stableDirs, d)
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			m.stableDirs[d] = true
		}
	}
	return nil
}

type memFile struct {
	fs     *MemFS
	name   string
	node   *memNode
	flag   int
	pos    int64
	closed bool
}

var errClosed = errors.New("file already closed")

func (f *memFile) guard(op Op) error {
	if f.closed {
		return &os.PathError{Op: string(op), Path: f.name, Err: errClosed}
	}
	return f.fs.check(op, f.name)
}

// writable refuses a write to a file closed or not opened for writing.
func (f *memFile) writable() error {
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &os.PathError{Op: "write", Path: f.name, Err: errors.New("file not open for writing")}
	}
	if f.closed {
		return &os.PathError{Op: "write", Path: f.name, Err: errClosed}
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.writable(); err != nil {
		return 0, err
	}
	n, err := len(p), f.fs.check(OpWrite, f.name)
	if err != nil {
		n = len(p) / 2
	}
	if f.flag&os.O_APPEND != 0 {
		f.pos = int64(len(f.node.data))
	}
	end := f.pos + int64(n)
	if end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[f.pos:], p[:n])
	f.node.dirty(f.pos, end)
	f.pos = end
	return n, err
}

// WriteAt implements File. Like Write, an injected OpWrite fault writes
// half of p first.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.writable(); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: errors.New("WriteAt on a file opened with O_APPEND")}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: errors.New("negative offset")}
	}
	n, err := len(p), f.fs.check(OpWrite, f.name)
	if err != nil {
		n = len(p) / 2
	}
	end := off + int64(n)
	if end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[off:], p[:n])
	f.node.dirty(off, end)
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: errClosed}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: errors.New("negative offset")}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.guard(OpSync); err != nil {
		return err
	}
	f.node.sync()
	return nil
}

// Map implements Mapper with a copy of the contents (what the page cache
// holds now): later writes to the file do not show through it, so it reads
// like a mapping of a file nobody writes, which is how callers use one.
func (f *memFile) Map() ([]byte, func() error, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, nil, &os.PathError{Op: "mmap", Path: f.name, Err: errClosed}
	}
	return append([]byte{}, f.node.data...), func() error { return nil }, nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.guard(OpTruncate); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: errors.New("negative size")}
	}
	if size <= int64(len(f.node.data)) {
		f.node.dirty(size, int64(len(f.node.data)))
		f.node.data = f.node.data[:size]
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, &os.PathError{Op: "stat", Path: f.name, Err: errClosed}
	}
	return memInfo{name: filepath.Base(f.name), size: int64(len(f.node.data))}, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: errClosed}
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o700
	}
	return 0o600
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

func (i memInfo) String() string { return fmt.Sprintf("%s (%d bytes)", i.name, i.size) }
