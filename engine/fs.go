package engine

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/engramdb/engram/internal/vfs"
)

// FS is the file system the engine does all its store I/O through: segment
// files (mapped with vfs.Map: mmap on the OS), the manifests and CURRENT,
// backups, the WAL, directory listings and stats. Tests substitute one
// that fails with ENOSPC, or a vfs.MemFS that loses what was not synced.
// The one exception is the LOCK file on the OS (see dirLock): an FS that
// is a vfs.Locker is locked through it instead. ReadLock and UnknownFiles,
// which take a path and no Options, read the OS.
type FS = vfs.FS

const createFlags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC

// writeFileAtomic writes data to dir/name through a temporary file: write,
// fsync, rename, fsync the directory. A crash leaves either the old file or
// the new one, never a torn one.
func writeFileAtomic(fsys FS, dir, name string, data []byte) error {
	return writeAtomic(fsys, dir, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomic is writeFileAtomic with the contents streamed by write.
func writeAtomic(fsys FS, dir, name string, write func(w io.Writer) error) error {
	tmp := dir + "/" + name + ".tmp"
	f, err := fsys.OpenFile(tmp, createFlags, 0o600)
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, dir+"/"+name)
	}
	if err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	return fsys.SyncDir(dir)
}

// mkdirDurable is MkdirAll that also syncs the parent of each directory it
// creates: a new directory's entry is metadata of its parent, and until the
// parent is synced a power loss may take the directory away with every
// file in it, however well those were synced (a store's dir, seg/, wal/).
func mkdirDurable(fsys FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}
