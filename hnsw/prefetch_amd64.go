//go:build !purego

package hnsw

import "unsafe"

// prefetch asks the CPU to start loading the cache line at p. Search
// issues it for every unvisited neighbour's code before computing any
// distance, so the cache misses overlap instead of queueing.
//
//go:noescape
func prefetch(p *int8)

// prefetchU32 is prefetch for a uint32 slice element.
//
//go:noescape
func prefetchU32(p *uint32)

// prefetchF32 is prefetch for a float32 slice element.
//
//go:noescape
func prefetchF32(p *float32)

// prefetchSpan is prefetch for every cache line holding a byte of the n
// bytes at p (a 100-byte code can straddle three lines).
//
//go:noescape
func prefetchSpan(p unsafe.Pointer, n int)
