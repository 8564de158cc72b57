//go:build !purego

package hnsw

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

// prefetchLines is prefetch for every cache line of the n bytes at p (n
// a multiple of 64 or not: the last partial line is fetched too). The
// caller guarantees the bytes are in one slice.
//
//go:noescape
func prefetchLines(p *int8, n int)
