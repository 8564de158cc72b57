package engine

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropMapped tells the kernel that the process no longer needs the pages
// of b, a part of a read-only file mapping: they leave its resident set
// (the page cache keeps them, and a later read maps them again). Only the
// whole pages inside b are dropped.
func dropMapped(b []byte) {
	const page = 4096
	if len(b) < page {
		return
	}
	start := uintptr(unsafe.Pointer(&b[0]))
	lo := (start + page - 1) &^ (page - 1)
	hi := (start + uintptr(len(b))) &^ (page - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-start:hi-start], unix.MADV_DONTNEED)
}
