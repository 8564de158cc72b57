package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync flushes f's data and size but not its other metadata (mtime),
// which saves a journal write per call on most Linux file systems.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
