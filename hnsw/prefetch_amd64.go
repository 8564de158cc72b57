//go:build !purego

package hnsw

import "unsafe"

// prefetchU32 asks the CPU to start loading the cache line at p. Search
// issues it (and prefetchSpan for a code or a list) before the loads it
// serves, so the cache misses overlap instead of queueing.
//
//go:noescape
func prefetchU32(p *uint32)

// prefetchF32 is prefetchU32 for a float32 slice element.
//
//go:noescape
func prefetchF32(p *float32)

// prefetchSpan is prefetchU32 for every cache line holding a byte of the n
// bytes at p (a 100-byte code can straddle three lines).
//
//go:noescape
func prefetchSpan(p unsafe.Pointer, n int)

// prefetchRows is prefetchSpan for the stride bytes at base+id*stride of
// every id in ids, in one call.
//
//go:noescape
func prefetchRows(base unsafe.Pointer, ids []uint32, stride int)
