//go:build unix

package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// dirLock is an exclusive flock on dir/LOCK. flock locks belong to the open
// file description, so a second Open in the same process conflicts too.
type dirLock struct{ f *os.File }

func lockDir(path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
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
	_ = l.write("")
	return l, nil
}

// write replaces the lock file's text with our pid and note (one line).
func (l *dirLock) write(note string) error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	text := strconv.Itoa(os.Getpid()) + "\n"
	if note != "" {
		text += note + "\n"
	}
	_, err := l.f.WriteAt([]byte(text), 0)
	return err
}

func (l *dirLock) unlock() error {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}
