package engine

import (
	"io"
	"os"

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
