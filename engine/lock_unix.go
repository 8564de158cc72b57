//go:build unix

package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/engramdb/engram/internal/vfs"
)

// dirLock excludes other handles from a store directory. On the OS it is
// an exclusive flock on dir/LOCK: flock locks belong to the open file
// description, so a second Open in the same process conflicts too. The
// LOCK file stays outside the FS abstraction: it holds no data (nothing in
// it needs to survive a crash, and a crash releases the lock), and flock
// needs a real descriptor. An FS that excludes users itself (vfs.Locker:
// MemFS, whose paths are not on the OS at all) is locked through that
// instead, and the LOCK text is written through it.
type dirLock struct {
	f *os.File // the flocked LOCK file; nil when held through a Locker

	fsys FS
	path string
	held io.Closer // the Locker's lock
}

// lockDir takes the lock at path and writes our pid into it. readOnly
// takes the same lock (so no writer changes the store meanwhile) without
// rewriting the file's text: it keeps naming the last holder. Only a
// missing LOCK file is created, empty.
func lockDir(fsys FS, path string, readOnly bool) (*dirLock, error) {
	if lk, ok := fsys.(vfs.Locker); ok {
		held, err := lk.Lock(path)
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("%w: %s is held by another handle", ErrLocked, path)
		}
		if err != nil {
			return nil, fmt.Errorf("engine: lock %s: %w", path, err)
		}
		l := &dirLock{fsys: fsys, path: path, held: held}
		if !readOnly {
			_ = l.write("")
		}
		return l, nil
	}
	flag := os.O_RDWR | os.O_CREATE
	if readOnly {
		flag = os.O_RDONLY
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			flag |= os.O_CREATE
		}
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("engine: open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "unknown"
		if b, rerr := os.ReadFile(path); rerr == nil && len(b) > 0 {
			if info := parseLock(b); info.PID != "" {
				holder = info.PID
				if info.Note != "" {
					holder += " (" + info.Note + ")"
				}
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by pid %s", ErrLocked, path, holder)
		}
		return nil, fmt.Errorf("engine: lock %s: %w", path, err)
	}
	// The pid is informational (for the ErrLocked message); the flock is
	// what excludes.
	l := &dirLock{f: f}
	if !readOnly {
		_ = l.write("")
	}
	return l, nil
}

// write replaces the lock file's text with our pid and note (one line).
// It is never synced: the text only describes the live holder.
func (l *dirLock) write(note string) error {
	text := strconv.Itoa(os.Getpid()) + "\n"
	if note != "" {
		text += note + "\n"
	}
	if l.f == nil {
		f, err := l.fsys.OpenFile(l.path, createFlags, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write([]byte(text))
		return errors.Join(err, f.Close())
	}
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(text), 0)
	return err
}

func (l *dirLock) unlock() error {
	if l.f == nil {
		return l.held.Close()
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}
