//go:build !amd64 || purego

package hnsw

// prefetch is a no-op where there is no assembly prefetch.
func prefetch(p *int8) {}

// prefetchU32 is a no-op where there is no assembly prefetch.
func prefetchU32(p *uint32) {}

// prefetchF32 is a no-op where there is no assembly prefetch.
func prefetchF32(p *float32) {}

// prefetchLines is a no-op where there is no assembly prefetch.
func prefetchLines(p *int8, n int) {}
