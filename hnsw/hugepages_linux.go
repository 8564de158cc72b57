package hnsw

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const hugePage = 2 << 20

// adviseHuge asks the kernel to back the 2 MiB-aligned interior of s with
// transparent huge pages (MADV_HUGEPAGE; where they are enabled at all,
// "madvise" being the common default). A walk reads codes and lists at
// random across arrays of hundreds of MB: with 4 KiB pages nearly every
// read also misses the TLB, so at 1M nodes the index searched 10-25%
// slower than the same graph read from one file image (whose pages the
// kernel happened to place contiguously). Call it on a slice not yet
// written, so that its pages are first faulted in as huge ones. Errors
// (no THP in this kernel) are ignored: the pages stay small.
func adviseHuge[T any](s []T) {
	if len(s) == 0 {
		return
	}
	var zero T
	size := uintptr(len(s)) * unsafe.Sizeof(zero)
	if size < 2*hugePage {
		return
	}
	start := uintptr(unsafe.Pointer(&s[0]))
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := (start + size) &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&s[0]), lo-start)), hi-lo)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
