package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LockInfo is what the LOCK file of a store says about the handle holding
// it: the process id and the note the holder set with SetLockNote (memctl
// serve records the address it serves on). Both are informational: the
// flock is what excludes, so a LOCK left by a process that died says who
// held it last, not who holds it now.
type LockInfo struct {
	PID  string
	Note string
}

// maxLockNote bounds a note: it is one line meant for a person or a client
// looking for the holder, not a place for data.
const maxLockNote = 1024

// SetLockNote records note (one line, at most 1 KiB) in the LOCK file after
// the pid, for whoever finds the store locked: ErrLocked names it, and
// ReadLock returns it. An empty note removes it.
func (d *DB) SetLockNote(note string) error {
	if strings.ContainsAny(note, "\r\n") || len(note) > maxLockNote {
		return fmt.Errorf("%w: a lock note is one line of at most %d bytes", ErrInvalid, maxLockNote)
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := d.lock.write(note); err != nil {
		return fmt.Errorf("engine: write LOCK: %w", err)
	}
	return nil
}

// ReadLock reads the LOCK file of the store in dir, on the OS file system,
// without taking the lock. A missing file gives a zero LockInfo and no
// error.
func ReadLock(dir string) (LockInfo, error) {
	b, err := os.ReadFile(filepath.Join(dir, "LOCK"))
	if errors.Is(err, os.ErrNotExist) {
		return LockInfo{}, nil
	}
	if err != nil {
		return LockInfo{}, fmt.Errorf("engine: read LOCK: %w", err)
	}
	return parseLock(b), nil
}

// parseLock reads "PID\n[NOTE\n]"; anything after the second line is ignored.
func parseLock(b []byte) LockInfo {
	if len(b) > 64<<10 {
		b = b[:64<<10]
	}
	lines := strings.SplitN(string(b), "\n", 3)
	info := LockInfo{PID: strings.TrimSpace(lines[0])}
	if len(lines) > 1 {
		info.Note = strings.TrimSpace(lines[1])
	}
	return info
}
